"""``gamebridge export``: rollout records into an SFT chat dataset."""

from __future__ import annotations

import argparse
from pathlib import Path

from rollouts.cli.common import (
    UsageError,
    _out,
)

# --- export -----------------------------------------------------------------------------


def _add_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("--in", dest="inp", required=True, help="records JSONL (eval/compare output)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--keep", default="wins,draws", help="wins,draws,losses or all")
    p.set_defaults(func=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from rollouts.evaluation.export import ExportError, export_dataset, parse_keep, read_records
    from rollouts.evaluation.records import read_run

    try:
        keep = parse_keep(args.keep)
    except ValueError as e:
        raise UsageError(str(e)) from None
    path = Path(args.inp)
    if not path.is_file():
        raise UsageError(f"--in {path}: no such file")
    try:
        run = read_run(path, warn=False)
        if not run.records and not run.unindexed:
            raise ValueError("no rollout records in it (expected gamebridge eval/compare JSONL)")
        records = read_records(path)
        out, rows, saved = export_dataset(records, args.out, keep)
    except (ExportError, OSError, ValueError, TypeError, KeyError) as e:
        raise UsageError(f"--in {path}: {e}") from None
    _out(f"kept {rows} of {len(records)} episodes ({', '.join(sorted(keep))})")
    _out(
        f"wrote {out / 'data.jsonl'}"
        + (f" and a datasets folder {out}" if saved else " (datasets not installed: JSONL only)")
    )
    return 0
