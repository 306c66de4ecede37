"""Exit codes and the one error the client raises.

0, 1 and 2 are the gate's answers; everything else means the gate could not answer,
so a CI job never mistakes a broken gate for a pass or for a measured regression.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_INCONCLUSIVE = 2
EXIT_UNREACHABLE = 3  # no connection, a timeout, a 5xx, or not evalsite's API
EXIT_AUTH = 4  # the token was refused (missing, wrong or revoked) or lacks the role
EXIT_REFUSED = 5  # the API refused the request: not found, invalid input
EXIT_RUN_NOT_DONE = 6  # the run failed, was cancelled or outlasted --timeout
EXIT_INTERRUPTED = 130  # Ctrl-C / SIGINT: the run goes on on the server
EXIT_USAGE = 64  # a wrong command line (argparse would use 2, a gate answer)


class GateError(Exception):
    """A failure of the gate itself, with the message to print and its exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
