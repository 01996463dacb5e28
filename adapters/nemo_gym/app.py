"""The ``ng_run`` entrypoint: NeMo Gym starts ``python app.py`` in the server's
directory with its global config in the environment (see ``gamebridge.yaml``).

``ng_run`` looks for ``resources_servers/<name>/app.py`` under its working
directory, so copy this file and ``gamebridge.yaml`` there (docs/nemo_gym.md);
never add a ``resources_servers`` package to this repository, which would
shadow the NeMo Gym wheel's.
"""

from adapters.nemo_gym.server import GameGymnasiumServer, GameToolsServer

# rosetta: registration: `ng_run` config (`gamebridge.yaml`) -> this `app.py`; or `python -m adapters.nemo_gym`
# rosetta: packaging: `app.py` + `gamebridge.yaml` copied into an `ng_run` `resources_servers/gamebridge/` directory (docs/nemo_gym.md)
if __name__ == "__main__":
    config = GameGymnasiumServer.load_config_from_global_config()
    server_cls = GameToolsServer if config.style == "tools" else GameGymnasiumServer
    server_cls.run_webserver()
