<?php

namespace App\Console\Commands;

use App\Jobs\AlwaysFails;
use App\Jobs\FifoStep;
use App\Jobs\RecordRun;
use App\Support\RunLog;
use Aws\Sdk;
use Illuminate\Console\Command;
use Illuminate\Foundation\Application;
use Illuminate\Support\Facades\Artisan;
use Illuminate\Support\Facades\DB;
use Symfony\Component\Process\Process;

// The Laravel smoke test: Laravel's own SQS queue driver (aws-sdk-php underneath) against okuri.
// One scenario per run, `--scenario` or OKURI_SCENARIO (compat/clients/README.md):
//
// laravel-queue (the default): creates a standard queue, dispatches JOBS jobs, one job that
//   always fails ($tries = 3) and one job delayed by DELAY_S, then runs `php artisan queue:work
//   sqs --stop-when-empty` (again, up to RUNS_MAX times, until everything is done) and checks
//   that every job ran exactly once, that the delayed job ran no sooner than its delay, and that
//   the failing job ran three times and was then recorded in failed_jobs.
// laravel-fifo: creates a FIFO queue and, through the `sqs-fifo` driver (app/Queue), sends two
//   message groups: a-1, a-2 (fails its first attempt), a-3 and b-1, b-2, then b-1 again with
//   the same deduplication id. It checks that each group ran in order, that a-3 waited for
//   a-2's retry, that the duplicate never ran, and that nothing landed in failed_jobs.
//
// On success the last stdout line is the compat recorder's `SCENARIO {...}` marker; on failure
// it says why on stderr, exit 1 (exit 2 for an unknown scenario).
//
// The standard queue waits WAIT_S on every receive (ReceiveMessageWaitTimeSeconds): Laravel's
// worker does not long-poll by itself, so this is what lets one worker run pick the delayed job
// up the moment it becomes visible, with no sleeping between runs. That also keeps a recording
// of this run replayable at full speed: the receive that got the delayed job waits for it on
// replay too.

class OkuriSmoke extends Command
{
    protected $signature = 'okuri:smoke
        {--scenario= : laravel-queue (the default, or OKURI_SCENARIO) or laravel-fifo}
        {--check : only say whether Laravel and the AWS SDK load}';

    protected $description = 'Run jobs through okuri with Laravel\'s SQS driver, and check what ran';

    private const SCENARIOS = ['laravel-queue', 'laravel-fifo'];
    private const JOBS = 5;
    // Long enough that a replay on a slow, shared CI machine still reaches the delayed job's
    // receive before the job is due, so every earlier receive gets the job it got when recorded.
    private const DELAY_S = 5;
    private const WAIT_S = 6;  // > DELAY_S, so the receive after the last retry waits for it
    private const FIFO_WAIT_S = 1;  // nothing is delayed; the last, empty receive waits this long
    private const RUNS_MAX = 5;
    private const WORKER_TIMEOUT_S = 120;
    // What each FIFO group's jobs must write, in this order: `name#attempt outcome`.
    private const FIFO_GROUPS = [
        'a' => ['a-1#1 ok', 'a-2#1 failed', 'a-2#2 ok', 'a-3#1 ok'],
        'b' => ['b-1#1 ok', 'b-2#1 ok'],
    ];

    public function handle(): int
    {
        $version = Application::VERSION.' / aws-sdk-php '.(class_exists(Sdk::class) ? Sdk::VERSION : 'missing');
        if ($this->option('check')) {
            $this->line("laravel {$version}");

            return class_exists(Sdk::class) ? 0 : 1;
        }

        $scenario = $this->option('scenario') ?: (getenv('OKURI_SCENARIO') ?: self::SCENARIOS[0]);
        if (! in_array($scenario, self::SCENARIOS, true)) {
            fwrite(STDERR, "unknown scenario {$scenario}; known: ".implode(', ', self::SCENARIOS)."\n");

            return 2;
        }
        $fifo = $scenario === 'laravel-fifo';
        $connection = $fifo ? 'sqs-fifo' : 'sqs';
        $name = (getenv('OKURI_SCENARIO_PREFIX') ?: 'laravel-').($fifo ? 'jobs.fifo' : 'jobs');
        $queue = app('queue')->connection($connection);
        $sqs = $queue->getSqs();

        $this->line("{$scenario}: queue {$name} at ".$queue->getQueue($name));
        $sqs->createQueue([
            'QueueName' => $name,
            'Attributes' => $fifo
                ? ['FifoQueue' => 'true', 'ReceiveMessageWaitTimeSeconds' => (string) self::FIFO_WAIT_S]
                : ['ReceiveMessageWaitTimeSeconds' => (string) self::WAIT_S],
        ]);
        $queue->clear($name);  // what a failed earlier run may have left behind
        $this->prepareDatabase();
        RunLog::reset();

        $fifo ? $this->dispatchFifo($name) : $this->dispatchJobs($name);

        for ($run = 1; $run <= self::RUNS_MAX && ! $this->finished($fifo); $run++) {
            $worker = new Process(
                [PHP_BINARY, base_path('artisan'), 'queue:work', $connection, "--queue={$name}",
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

        $problem = $fifo ? $this->fifoProblem() : $this->queueProblem($name);
        if ($problem !== null) {
            return $this->smokeFailed($problem);
        }
        if ($queue->size($name) !== 0) {
            return $this->smokeFailed('the queue is not empty after the worker stopped');
        }
        $sqs->deleteQueue(['QueueUrl' => $queue->getQueue($name)]);

        $this->line($fifo
            ? 'ok: each message group ran in order, a-3 waited for a-2\'s retry, the duplicate of b-1 never ran'
            : 'ok: '.self::JOBS.' jobs ran once each, the delayed job waited its '.self::DELAY_S
                .' s, the failing job ran 3 times and is in failed_jobs');
        $this->line('SCENARIO '.json_encode(
            ['client' => 'laravel', 'version' => $version, 'scenario' => $scenario],
            JSON_UNESCAPED_SLASHES
        ));

        return 0;
    }

    private function dispatchJobs(string $name): void
    {
        for ($i = 1; $i <= self::JOBS; $i++) {
            RecordRun::dispatch("job-{$i}", microtime(true))->onConnection('sqs')->onQueue($name);
        }
        AlwaysFails::dispatch()->onConnection('sqs')->onQueue($name);
        RecordRun::dispatch('delayed', microtime(true))
            ->onConnection('sqs')->onQueue($name)->delay(self::DELAY_S);
        $this->line('dispatched '.self::JOBS.' jobs, 1 failing job, 1 job delayed '.self::DELAY_S.' s');
    }

    private function dispatchFifo(string $name): void
    {
        $steps = [['a-1', 'a', false], ['b-1', 'b', false], ['a-2', 'a', true], ['b-2', 'b', false],
            ['a-3', 'a', false], ['b-1', 'b', false]];  // the last is b-1's duplicate
        foreach ($steps as [$step, $group, $failFirst]) {
            FifoStep::dispatch($step, $group, $failFirst)->onConnection('sqs-fifo')->onQueue($name);
        }
        $this->line('dispatched a-1, b-1, a-2 (fails once), b-2, a-3 and b-1 again to groups a and b');
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

    private function finished(bool $fifo): bool
    {
        $entries = RunLog::entries();
        if ($fifo) {
            $done = array_column(array_filter($entries, fn ($e) => $e['ok']), 'job');

            // every step once with outcome ok, as FIFO_GROUPS lists them
            return count(array_unique($done))
                === count(preg_grep('/ ok$/', array_merge(...array_values(self::FIFO_GROUPS))));
        }
        $ran = array_column($entries, 'job');

        return in_array('delayed', $ran, true) && DB::table('failed_jobs')->count() > 0;
    }

    private function queueProblem(string $name): ?string
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

    private function fifoProblem(): ?string
    {
        $entries = RunLog::entries();
        foreach (self::FIFO_GROUPS as $group => $expected) {
            $ran = array_values(array_map(
                fn ($e) => sprintf('%s#%d %s', $e['job'], $e['attempt'], $e['ok'] ? 'ok' : 'failed'),
                array_filter($entries, fn ($e) => $e['group'] === $group)
            ));
            if ($ran !== $expected) {
                return "group {$group} ran [".implode(', ', $ran).'], expected ['.implode(', ', $expected).']';
            }
        }
        $failed = DB::table('failed_jobs')->count();

        return $failed === 0 ? null : "{$failed} rows in failed_jobs, expected none";
    }

    private function smokeFailed(string $why): int
    {
        fwrite(STDERR, "laravel smoke FAILED: {$why}\n");

        return 1;
    }
}
