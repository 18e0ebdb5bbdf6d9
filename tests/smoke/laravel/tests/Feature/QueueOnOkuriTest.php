<?php

namespace Tests\Feature;

use App\Jobs\RecordRun;
use App\Support\RunLog;
use Illuminate\Contracts\Console\Kernel;
use Illuminate\Foundation\Testing\TestCase;
use Illuminate\Support\Facades\Artisan;
use Illuminate\Support\Facades\Queue;

// An application's PHPUnit test of its queued job, run against a real okuri through Laravel's
// own `sqs` driver: the test dispatches the job, sees it arrive on the queue, and lets a worker
// run it. Nothing here knows okuri: config/queue.php points the driver at AWS_ENDPOINT_URL.
// Each test uses a queue of its own, created and deleted here (Laravel never creates queues).

class QueueOnOkuriTest extends TestCase
{
    private string $queue;

    private string $queueUrl;

    public function createApplication()
    {
        $app = require __DIR__.'/../../bootstrap/app.php';
        $app->make(Kernel::class)->bootstrap();

        return $app;
    }

    protected function setUp(): void
    {
        parent::setUp();
        $this->queue = 'phpunit-'.bin2hex(random_bytes(6));
        // A receive that waits up to 2 s for a message answers as soon as one is there.
        $this->queueUrl = Queue::connection('sqs')->getSqs()->createQueue([
            'QueueName' => $this->queue,
            'Attributes' => ['ReceiveMessageWaitTimeSeconds' => '2'],
        ])->get('QueueUrl');
        RunLog::reset();
    }

    protected function tearDown(): void
    {
        Queue::connection('sqs')->getSqs()->deleteQueue(['QueueUrl' => $this->queueUrl]);
        parent::tearDown();
    }

    public function test_a_dispatched_job_arrives_on_the_queue_and_a_worker_runs_it(): void
    {
        $sqs = Queue::connection('sqs');
        RecordRun::dispatch('phpunit', microtime(true))->onConnection('sqs')->onQueue($this->queue);

        $this->assertSame(1, $sqs->size($this->queue), 'the job did not arrive on the queue');

        $status = Artisan::call('queue:work', [
            'connection' => 'sqs', '--queue' => $this->queue, '--once' => true, '--tries' => 1,
        ]);
        $this->assertSame(0, $status);
        $runs = RunLog::entries();
        $this->assertCount(1, $runs);
        $this->assertSame(['phpunit', 1], [$runs[0]['job'], $runs[0]['attempt']]);
        $this->assertSame(0, $sqs->size($this->queue), 'the worker did not delete the job');
    }
}
