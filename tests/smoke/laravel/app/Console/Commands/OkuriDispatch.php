<?php

namespace App\Console\Commands;

use App\Jobs\RecordRun;
use Illuminate\Console\Command;

// Sends one RecordRun job through the default queue connection to its default queue, exactly as
// an app's `MyJob::dispatch(...)` would: what the README's Laravel test (test_readme_laravel.py)
// hands to the README's `php artisan queue:work sqs`, which writes it down in the run log.

class OkuriDispatch extends Command
{
    protected $signature = 'okuri:dispatch {name : what the job writes in the run log}';

    protected $description = 'Dispatch one RecordRun job to the default connection\'s default queue';

    public function handle(): int
    {
        $name = (string) $this->argument('name');
        RecordRun::dispatch($name, microtime(true));
        $connection = config('queue.default');
        $this->line("dispatched {$name} to ".app('queue')->connection($connection)->getQueue(null));

        return 0;
    }
}
