"""The app `celery -A bench.celery_worker worker` loads: bench.celery_tasks' app,
configured from the JSON document in OKURI_BENCH_CELERY (set by bench/celery_load.py).

Why a module of its own: Celery's `-A` names a module holding the app, and building the app
needs the configuration, which only the worker's environment carries.
"""

from __future__ import annotations

import os

from bench.celery_tasks import CONFIG_ENV, AppConfig, make_app

app = make_app(AppConfig.from_json(os.environ[CONFIG_ENV]))
