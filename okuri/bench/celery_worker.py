"""The app `celery -A okuri.bench.celery_worker worker` loads: okuri.bench.celery_tasks' app,
configured from the JSON document in OKURI_BENCH_CELERY (set by okuri/bench/celery_load.py).

Why a module of its own: Celery's `-A` names a module holding the app, and building the app
needs the configuration, which only the worker's environment carries.
"""

from __future__ import annotations

import os

from okuri.bench.celery_tasks import CONFIG_ENV, AppConfig, make_app

app = make_app(AppConfig.from_json(os.environ[CONFIG_ENV]))
