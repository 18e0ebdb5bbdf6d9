<?php

namespace App\Console\Commands;

use App\Jobs\AlwaysFails;
use App\Jobs\RecordRun;
use App\Support\RunLog;
use Aws\Sdk;
use Illuminate\Console\Command;
use Illuminate\Foundation\Application;
use Illuminate\Support\Facades\Artisan;
use Illuminate\Support\Facades\DB;
use Symfony\Component\Process\Process;

// The Laravel smoke test: Laravel's own SQS queue driver (aws-sdk-php underneath) against okuri.
//
// It creates the queue, dispatches JOBS jobs, one job that always fails ($tries = 3) and one job
// delayed by DELAY_S, then runs `php artisan queue:work sqs --stop-when-empty` (again, up to
// RUNS_MAX times, until everything is done) and checks that every job ran exactly once, that the
// delayed job ran no sooner than its delay, and that the failing job ran three times and was then
// recorded in failed_jobs. On success the last stdout line is the compat recorder's
// `SCENARIO {...}` marker (compat/clients/README.md); on failure it says why on stderr, exit 1.
//
// The queue waits WAIT_S on every receive (ReceiveMessageWaitTimeSeconds): Laravel's worker does
// not long-poll by itself, so this is what lets one worker run pick the delayed job up the moment
// it becomes visible, with no sleeping between runs. That also keeps a recording of this run
// replayable at full speed: the receive that got the delayed job waits for it on replay too.

class OkuriSmoke extends Command
{
    protected $signature = 'okuri:smoke {--check : only say whether Laravel and the AWS SDK load}';

    protected $description = 'Run jobs, a delayed job and a failing job through okuri, and check them';

    private const JOBS = 5;
    // Long enough that a replay on a slow, shared CI machine still reaches the delayed job's
    // receive before the job is due, so every earlier receive gets the job it got when recorded.
    private const DELAY_S = 5;
    private const WAIT_S = 6;  // > DELAY_S, so the receive after the last retry waits for it
    private const RUNS_MAX = 5;
    private const WORKER_TIMEOUT_S = 120;

    public function handle(): int
    {
        $version = Application::VERSION.' / aws-sdk-php '.(class_exists(Sdk::class) ? Sdk::VERSION : 'missing');
        if ($this->option('check')) {
            $this->line("laravel {$version}");

            return class_exists(Sdk::class) ? 0 : 1;
        }

        $name = (getenv('OKURI_SCENARIO_PREFIX') ?: 'laravel-').'jobs';
        $queue = app('queue')->connection('sqs');
        $sqs = $queue->getSqs();

        $this->line("queue {$name} at ".$queue->getQueue($name));
        $sqs->createQueue([
            'QueueName' => $name,
            'Attributes' => ['ReceiveMessageWaitTimeSeconds' => (string) self::WAIT_S],
        ]);
        $queue->clear($name);  // what a failed earlier run may have left behind
        $this->prepareDatabase();
        RunLog::reset();

        for ($i = 1; $i <= self::JOBS; $i++) {
            RecordRun::dispatch("job-{$i}", microtime(true))->onConnection('sqs')->onQueue($name);
        }
        AlwaysFails::dispatch()->onConnection('sqs')->onQueue($name);
        RecordRun::dispatch('delayed', microtime(true))
            ->onConnection('sqs')->onQueue($name)->delay(self::DELAY_S);
        $this->line('dispatched '.self::JOBS.' jobs, 1 failing job, 1 job delayed '.self::DELAY_S.' s');

        for ($run = 1; $run <= self::RUNS_MAX && ! $this->finished(); $run++) {
            $worker = new Process(
                [PHP_BINARY, base_path('artisan'), 'queue:work', 'sqs', "--queue={$name}",
                    '--stop-when-empty', '--sleep=0', '--timeout=30'],
                base_path(), null, null, self::WORKER_TIMEOUT_S
            );
            $worker->run();
            $this->line("worker run {$run}:");
            $this->getOutput()->write($worker->getOutput());
            if (! $worker->isSuccessful()) {
                return $this->smokeFailed("queue:work exited {$worker->getExitCode()}: ".$worker->getErrorOutput());
            }
        }

        $problem = $this->problem($name);
        if ($problem !== null) {
            return $this->smokeFailed($problem);
        }
        if ($queue->size($name) !== 0) {
            return $this->smokeFailed('the queue is not empty after the worker stopped');
        }
        $sqs->deleteQueue(['QueueUrl' => $queue->getQueue($name)]);

        $this->line('ok: '.self::JOBS.' jobs ran once each, the delayed job waited its '.self::DELAY_S
            .' s, the failing job ran 3 times and is in failed_jobs');
        $this->line('SCENARIO '.json_encode(
            ['client' => 'laravel', 'version' => $version, 'scenario' => 'laravel-queue'],
            JSON_UNESCAPED_SLASHES
        ));

        return 0;
    }

    private function prepareDatabase(): void
    {
        $path = config('database.connections.sqlite.database');
        if (! is_file($path)) {
            touch($path);
        }
        Artisan::call('migrate', ['--force' => true]);
        DB::table('failed_jobs')->delete();
    }

    private function finished(): bool
    {
        $ran = array_column(RunLog::entries(), 'job');

        return in_array('delayed', $ran, true) && DB::table('failed_jobs')->count() > 0;
    }

    private function problem(string $name): ?string
    {
        $entries = RunLog::entries();
        for ($i = 1; $i <= self::JOBS; $i++) {
            $runs = array_filter($entries, fn ($e) => $e['job'] === "job-{$i}");
            if (count($runs) !== 1) {
                return "job-{$i} ran ".count($runs).' times, expected once';
            }
        }
        $delayed = array_values(array_filter($entries, fn ($e) => $e['job'] === 'delayed'));
        if (count($delayed) !== 1) {
            return 'the delayed job ran '.count($delayed).' times, expected once';
        }
        $waited = $delayed[0]['ran_at'] - $delayed[0]['dispatched_at'];
        if ($waited < self::DELAY_S) {
            return sprintf('the delayed job ran after %.3f s, before its %d s delay', $waited, self::DELAY_S);
        }
        $attempts = array_column(
            array_filter($entries, fn ($e) => $e['job'] === 'always-fails' && isset($e['attempt'])),
            'attempt'
        );
        if ($attempts !== [1, 2, 3]) {
            return 'the failing job ran with attempts ['.implode(', ', $attempts).'], expected [1, 2, 3]';
        }
        if (count(array_filter($entries, fn ($e) => isset($e['failed']))) !== 1) {
            return "the failing job's failed() method was not called exactly once";
        }
        $failed = DB::table('failed_jobs')->get();
        if (count($failed) !== 1) {
            return count($failed).' rows in failed_jobs, expected 1';
        }
        $payload = json_decode($failed[0]->payload, true);
        // Laravel records the queue as the SQS driver names it: the queue's URL.
        if ($failed[0]->connection !== 'sqs' || ! str_ends_with('/'.$failed[0]->queue, '/'.$name)
            || ($payload['displayName'] ?? null) !== AlwaysFails::class) {
            return 'failed_jobs does not hold the failing job: '
                .json_encode(['connection' => $failed[0]->connection, 'queue' => $failed[0]->queue]);
        }
        $this->line(sprintf('the delayed job ran %.3f s after it was dispatched', $waited));

        return null;
    }

    private function smokeFailed(string $why): int
    {
        fwrite(STDERR, "laravel smoke FAILED: {$why}\n");

        return 1;
    }
}
