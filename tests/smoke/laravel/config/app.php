<?php

use Illuminate\Support\ServiceProvider;

return [
    'name' => 'okuri-laravel-smoke',
    'env' => env('APP_ENV', 'local'),
    'debug' => (bool) env('APP_DEBUG', false),
    'timezone' => 'UTC',
    'locale' => 'en',

    // Laravel 10 and later know their default providers; Laravel 8 (Debian's) needs a list, and
    // this app needs only the queue, the database (failed jobs) and the console commands.
    // Then the app's own: the `sqs-fifo` queue driver.
    'providers' => [
        ...(method_exists(ServiceProvider::class, 'defaultProviders')
            ? ServiceProvider::defaultProviders()->toArray()
            : [
                Illuminate\Bus\BusServiceProvider::class,
                Illuminate\Cache\CacheServiceProvider::class,
                Illuminate\Database\DatabaseServiceProvider::class,
                Illuminate\Filesystem\FilesystemServiceProvider::class,
                Illuminate\Foundation\Providers\ConsoleSupportServiceProvider::class,
                Illuminate\Foundation\Providers\FoundationServiceProvider::class,
                Illuminate\Pipeline\PipelineServiceProvider::class,
                Illuminate\Queue\QueueServiceProvider::class,
            ]),
        App\Providers\FifoQueueServiceProvider::class,
    ],
];
