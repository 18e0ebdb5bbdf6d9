<?php

namespace App\Queue;

use Illuminate\Queue\Connectors\SqsConnector;

// Makes the `sqs-fifo` driver's queue from the same connection settings as Laravel's `sqs`
// driver: the stock connector builds the SDK client, this one wraps it in a FifoSqsQueue.

class FifoSqsConnector extends SqsConnector
{
    public function connect(array $config)
    {
        $stock = parent::connect($config);

        return new FifoSqsQueue(
            $stock->getSqs(),
            $config['queue'],
            $config['prefix'] ?? '',
            $config['suffix'] ?? '',
            $config['after_commit'] ?? false
        );
    }
}
