"""``python -m adapters.nemo_gym.agent --port N --resources-url URL --model-url URL``:
NeMo Gym's own ``GymnasiumAgent`` served without ``ng_run`` (uvicorn on 127.0.0.1);
see ``adapters/nemo_gym/agent/__init__.py``."""

from __future__ import annotations

import argparse

from adapters.nemo_gym.agent import __doc__ as AGENT_DOC
from adapters.nemo_gym.agent import build_agent_app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m adapters.nemo_gym.agent",
        description=AGENT_DOC,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--resources-url", required=True, help="the gamebridge gymnasium server")
    parser.add_argument("--model-url", required=True, help="OpenAI-compatible base URL (…/v1)")
    parser.add_argument(
        "--max-steps",
        type=int,
        default=100,
        help="model turns before the agent cuts a game (set >= the tasks' max_turns)",
    )
    args = parser.parse_args(argv)
    from adapters._lifeline import watch

    watch()  # stop with the process that started us, however it ends
    import uvicorn

    app = build_agent_app(args.port, args.resources_url, args.model_url, args.max_steps, args.host)
    uvicorn.run(
        app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=1
    )


if __name__ == "__main__":
    main()
