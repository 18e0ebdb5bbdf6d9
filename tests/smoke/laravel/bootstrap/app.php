<?php

// The application container with the console kernel; this app has no HTTP side.
// LARAVEL_STORAGE_PATH moves storage/ (logs, the smoke run's log) elsewhere, as Laravel 11
// and later do by themselves; the tests use it to leave the working copy untouched.

$app = new Illuminate\Foundation\Application(
    $_ENV['APP_BASE_PATH'] ?? dirname(__DIR__)
);

if (getenv('LARAVEL_STORAGE_PATH')) {
    $app->useStoragePath(getenv('LARAVEL_STORAGE_PATH'));
}

$app->singleton(
    Illuminate\Contracts\Console\Kernel::class,
    App\Console\Kernel::class
);

$app->singleton(
    Illuminate\Contracts\Debug\ExceptionHandler::class,
    Illuminate\Foundation\Exceptions\Handler::class
);

return $app;
