"""The frameworks' floors: for each server framework gamebridge serves (OpenEnv, NeMo
Gym in both styles, ORS), a minimal Tic-Tac-Toe environment written the way that
framework's own docs and examples write one, with a random opponent inline and no
gamebridge import (each module's docstring names the example it follows).

``bench.servers`` plays each floor and gamebridge's server back to back, with the same
client sessions (``rollouts.drivers.<framework>``) and the same scripted player: the
adapter's cost is its ratio to the floor measured in the same run.
"""
