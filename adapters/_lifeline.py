"""The parent-death check of a server a driver started (standard library only).

``rollouts.model.servers.start_server`` hands its child the read end of a pipe whose write
end only the parent holds (``GAMEBRIDGE_LIFELINE_FD``). :func:`watch` starts a daemon
thread blocked on that pipe: when the parent ends in any way, SIGKILL included, the
kernel closes the write end, the read returns end-of-file and the server stops its
whole process group (SIGTERM, then SIGKILL after ``grace`` seconds), first removing
its log file (``GAMEBRIDGE_SERVER_LOG``) that the dead parent can no longer remove.
Without the variable (a server started by hand) it does nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

ENV_VAR = "GAMEBRIDGE_LIFELINE_FD"
LOG_VAR = "GAMEBRIDGE_SERVER_LOG"
"""The server's log file, which its starter removes on a normal end: when the starter
died instead, the watcher removes it (logs piled up in the temporary folder)."""


def _stop_group(grace: float) -> None:
    group = os.getpgrp()
    try:
        os.killpg(group, signal.SIGTERM)
        time.sleep(grace)
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
    os._exit(1)  # not a process-group leader (run by hand): end this process at least


def watch(grace: float = 3.0) -> bool:
    """Start the watcher if a lifeline was handed down; ``True`` if it was."""
    raw = os.environ.pop(ENV_VAR, None)
    log = os.environ.pop(LOG_VAR, None)
    if not raw:
        return False
    fd = int(raw)

    def wait() -> None:
        try:
            while os.read(fd, 1):
                pass
        except OSError:
            pass
        if log:
            with contextlib.suppress(OSError):
                os.unlink(log)
        _stop_group(grace)

    threading.Thread(target=wait, name="lifeline", daemon=True).start()
    return True
