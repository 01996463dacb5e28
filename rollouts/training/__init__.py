"""Training with TRL: GRPO (``grpo``), SFT (``sft``), the tiny local model (``tiny``),
the seed's recipe end to end (``recipe``), multi-process GRPO (``ddp``), TRL's
OpenReward bridge (``ors``) and the ``gamebridge train`` subcommands (``cli``)."""
