"""OpenEnv's server package for gamebridge (``openenv init``'s layout: ``server/app.py``,
``server/Dockerfile``); the adapter itself is ``adapters/openenv``."""
