<?php

namespace App\Jobs;

use App\Support\RunLog;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use RuntimeException;
use Throwable;

// A job that throws on every attempt: the worker releases it back to the queue (SQS
// ChangeMessageVisibility 0) until it has been received $tries times, then deletes it, records
// it in failed_jobs and calls failed().

class AlwaysFails implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 3;

    public function handle(): void
    {
        RunLog::append(['job' => 'always-fails', 'attempt' => $this->attempts()]);

        throw new RuntimeException('okuri smoke: this job always fails');
    }

    public function failed(Throwable $error): void
    {
        RunLog::append(['job' => 'always-fails', 'failed' => $error->getMessage()]);
    }
}
