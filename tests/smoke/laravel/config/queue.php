<?php

// The `sqs` connection points at okuri. okuri serves every queue under
// http://HOST:PORT/000000000000/NAME, so the prefix is okuri's URL plus that account id, and
// `endpoint` sends the SDK's requests to okuri instead of AWS. The key pair is the one okuri
// was started with (OKURI_ACCESS_KEY_ID / OKURI_SECRET_ACCESS_KEY).

$okuri = rtrim(env('AWS_ENDPOINT_URL', 'http://localhost:8080'), '/');

return [
    'default' => env('QUEUE_CONNECTION', 'sqs'),

    'connections' => [
        'sqs' => [
            'driver' => 'sqs',
            'key' => env('AWS_ACCESS_KEY_ID'),
            'secret' => env('AWS_SECRET_ACCESS_KEY'),
            'prefix' => env('SQS_PREFIX', $okuri.'/000000000000'),
            'queue' => env('SQS_QUEUE', 'default'),
            'suffix' => env('SQS_SUFFIX'),
            'region' => env('AWS_DEFAULT_REGION', 'us-east-1'),
            'endpoint' => $okuri,
            'after_commit' => false,
        ],
        // The same queue service for FIFO queues (names ending in .fifo): the `sqs-fifo` driver
        // (app/Queue/FifoSqsQueue.php) sends each job's message group and deduplication id.
        'sqs-fifo' => [
            'driver' => 'sqs-fifo',
            'key' => env('AWS_ACCESS_KEY_ID'),
            'secret' => env('AWS_SECRET_ACCESS_KEY'),
            'prefix' => env('SQS_PREFIX', $okuri.'/000000000000'),
            'queue' => env('SQS_FIFO_QUEUE', 'default.fifo'),
            'suffix' => env('SQS_SUFFIX'),
            'region' => env('AWS_DEFAULT_REGION', 'us-east-1'),
            'endpoint' => $okuri,
            'after_commit' => false,
        ],
    ],

    // Jobs that used up their tries land in the failed_jobs table (a migration in
    // database/migrations); `php artisan queue:failed` lists them, `queue:retry` resends them.
    'failed' => [
        'driver' => 'database-uuids',
        'database' => 'sqlite',
        'table' => 'failed_jobs',
    ],
];
