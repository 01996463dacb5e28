"""``python -m rollouts.train_tiny`` (``make train-tiny``): the tiny CPU demo of
``rollouts.tiny`` with its default settings (flags as ``gamebridge train tiny``)."""

from __future__ import annotations

from rollouts.tiny import main

if __name__ == "__main__":
    raise SystemExit(main())
