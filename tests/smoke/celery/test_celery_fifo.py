"""Celery on a FIFO queue through kombu's stock SQS transport: kombu creates the `.fifo` queue
with FifoQueue=true and sends each task with a message group and a deduplication id; every task
runs exactly once."""

from __future__ import annotations

from celery import Celery
from celery_smoke import CeleryOkuri, Records, StartWorker

TASKS = 30


def test_tasks_on_a_fifo_queue_each_run_once(
    celery_okuri: CeleryOkuri,
    start_worker: StartWorker,
    producer: Celery,
    records: Records,
    queue_name: str,
) -> None:
    fifo = queue_name + ".fifo"
    start_worker(fifo)
    results = [
        producer.send_task("smoke.add", args=(i, 0), kwargs={"tag": f"fifo-{i:03}"}, queue=fifo)
        for i in range(TASKS)
    ]
    runs = records.wait(lambda runs: len(runs) >= TASKS, timeout_s=120)
    assert sorted(run["tag"] for run in runs) == [f"fifo-{i:03}" for i in range(TASKS)]
    assert [r.get(timeout=30, interval=0.1) for r in results] == list(range(TASKS))

    sqs = celery_okuri.sqs()
    url = sqs.get_queue_url(QueueName=fifo)["QueueUrl"]
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["FifoQueue"])["Attributes"]
    assert attrs == {"FifoQueue": "true"}
