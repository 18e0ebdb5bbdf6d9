<?php

namespace App\Queue;

use Illuminate\Queue\SqsQueue;
use Illuminate\Support\Str;
use LogicException;

// Laravel's SQS queue for FIFO queues, on Laravel 8 as on later versions. A FIFO queue refuses a
// message without a MessageGroupId, and Laravel 8's own `sqs` driver sends none, so this driver
// (`sqs-fifo`, registered by App\Providers\FifoQueueServiceProvider) adds the two FIFO fields:
// the group from the job's messageGroup(), the deduplication id from its deduplicationId(),
// else a fresh id. Receiving, releasing and deleting are the stock driver's; a FIFO queue takes
// no per-message delay, so later() refuses.

class FifoSqsQueue extends SqsQueue
{
    public function push($job, $data = '', $queue = null)
    {
        return $this->enqueueUsing(
            $job,
            $this->createPayload($job, $queue ?: $this->default, $data),
            $queue,
            null,
            fn ($payload, $queue) => $this->pushRaw($payload, $queue, self::fifoOptions($job))
        );
    }

    public function pushRaw($payload, $queue = null, array $options = [])
    {
        return $this->sqs->sendMessage(
            ['QueueUrl' => $this->getQueue($queue), 'MessageBody' => $payload] + $options
        )->get('MessageId');
    }

    public function later($delay, $job, $data = '', $queue = null)
    {
        throw new LogicException('a FIFO queue takes no per-message delay; set DelaySeconds on the queue');
    }

    /** @return array{MessageGroupId: string, MessageDeduplicationId: string} */
    private static function fifoOptions(mixed $job): array
    {
        $group = is_object($job) && method_exists($job, 'messageGroup') ? $job->messageGroup() : 'default';
        $dedup = is_object($job) && method_exists($job, 'deduplicationId') ? $job->deduplicationId() : null;

        return [
            'MessageGroupId' => (string) $group,
            'MessageDeduplicationId' => (string) ($dedup ?? Str::uuid()),
        ];
    }
}
