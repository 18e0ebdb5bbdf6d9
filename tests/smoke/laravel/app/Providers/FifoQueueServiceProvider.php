<?php

namespace App\Providers;

use App\Queue\FifoSqsConnector;
use Illuminate\Support\ServiceProvider;

// Registers the `sqs-fifo` queue driver (App\Queue\FifoSqsQueue) that config/queue.php's
// `sqs-fifo` connection uses.

class FifoQueueServiceProvider extends ServiceProvider
{
    public function boot(): void
    {
        $this->app['queue']->extend('sqs-fifo', fn () => new FifoSqsConnector());
    }
}
