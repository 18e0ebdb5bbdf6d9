<?php

namespace App\Jobs;

use App\Support\RunLog;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use RuntimeException;

// One step of a FIFO message group: it writes down every attempt, in order, so the smoke
// command can check that a group's jobs ran one after another in the order they were sent.
// With $failFirst it throws on its first attempt: the worker releases it, and the group's
// later jobs must wait until its retry has succeeded. Its name is its deduplication id, so
// sending the same step twice within SQS's five minutes runs it once.

class FifoStep implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 3;

    public function __construct(public string $name, public string $group, public bool $failFirst = false)
    {
    }

    public function messageGroup(): string
    {
        return $this->group;
    }

    public function deduplicationId(): string
    {
        return $this->name;
    }

    public function handle(): void
    {
        $fails = $this->failFirst && $this->attempts() === 1;
        RunLog::append([
            'job' => $this->name,
            'group' => $this->group,
            'attempt' => $this->attempts(),
            'ok' => ! $fails,
        ]);
        if ($fails) {
            throw new RuntimeException("okuri smoke: {$this->name} fails its first attempt");
        }
    }
}
