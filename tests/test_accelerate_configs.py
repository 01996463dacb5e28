"""configs/accelerate/*.yaml load with accelerate's own config loader and plan a launch
on CPU: the environment ``accelerate launch --config_file <file>`` would hand its 4
processes (DDP, DeepSpeed ZeRO-2 and ZeRO-3, FSDP 2), built by accelerate's launch
helpers without starting anything. Running them needs GPUs (docs/trl.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("accelerate", reason="accelerate is not installed: pip install -e '.[trl]'")
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.commands.launch import (
    _validate_launch_command,  # what `accelerate launch` runs first: config file into args
    launch_command_parser,
)
from accelerate.utils import DistributedType
from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "accelerate"
EXPECTED = {
    "ddp.yaml": (DistributedType.MULTI_GPU, {}),
    "zero2.yaml": (DistributedType.DEEPSPEED, {"ACCELERATE_DEEPSPEED_ZERO_STAGE": "2"}),
    "zero3.yaml": (
        DistributedType.DEEPSPEED,
        {"ACCELERATE_DEEPSPEED_ZERO_STAGE": "3", "ACCELERATE_DEEPSPEED_ZERO3_INIT": "true"},
    ),
    "fsdp.yaml": (
        DistributedType.FSDP,
        {
            "ACCELERATE_USE_FSDP": "true",
            "FSDP_VERSION": "2",
            "FSDP_SHARDING_STRATEGY": "FULL_SHARD",
        },
    ),
}


def test_every_shipped_config_is_checked() -> None:
    assert sorted(p.name for p in CONFIGS.glob("*.yaml")) == sorted(EXPECTED)


def plan(path: Path) -> tuple[Any, dict[str, str]]:
    """The launch arguments and the environment accelerate would give the workers,
    as ``accelerate launch --config_file path -m rollouts.training.ddp train`` does."""
    argv = ["--config_file", str(path), "-m", "rollouts.training.ddp", "train"]
    args, config, _ = _validate_launch_command(launch_command_parser().parse_args(argv))
    if args.use_deepspeed:  # as launch_command sets it before deepspeed_launcher
        args.deepspeed_fields_from_accelerate_config = ",".join(
            [*config.deepspeed_config, "mixed_precision"]
        )
        _, env = prepare_deepspeed_cmd_env(args)
    else:
        env = prepare_multi_gpu_env(args)
    return args, env


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_config_loads_and_plans_four_bf16_processes(name: str) -> None:
    kind, settings = EXPECTED[name]
    config = load_config_from_file(str(CONFIGS / name))
    assert config.distributed_type == kind
    assert (config.num_processes, config.num_machines, config.mixed_precision) == (4, 1, "bf16")
    assert config.use_cpu is False
    args, env = plan(CONFIGS / name)
    assert (
        args.num_processes == 4 and args.module and args.training_script == "rollouts.training.ddp"
    )
    assert (args.multi_gpu, args.use_deepspeed, args.use_fsdp) == (
        kind == DistributedType.MULTI_GPU,
        kind == DistributedType.DEEPSPEED,
        kind == DistributedType.FSDP,
    )
    assert env["ACCELERATE_MIXED_PRECISION"] == "bf16"
    for key, value in settings.items():
        assert env[key] == value, key
