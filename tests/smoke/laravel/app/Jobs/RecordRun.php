<?php

namespace App\Jobs;

use App\Support\RunLog;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

// A job that succeeds and writes down when it ran, so the smoke command can check that every
// job ran once and that a delayed job waited for its delay.

class RecordRun implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public function __construct(public string $name, public float $dispatchedAt)
    {
    }

    public function handle(): void
    {
        RunLog::append([
            'job' => $this->name,
            'attempt' => $this->attempts(),
            'dispatched_at' => $this->dispatchedAt,
            'ran_at' => microtime(true),
        ]);
    }
}
