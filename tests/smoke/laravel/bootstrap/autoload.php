<?php

// Where the framework and the AWS SDK come from, the first of:
//
// 1. the autoloader LARAVEL_VENDOR_AUTOLOAD names, if set;
// 2. composer's vendor/autoload.php (the compose profile's image runs composer install);
// 3. bootstrap/system.php: Debian's packaged Laravel and Guzzle (php-laravel-framework) with the
//    AWS SDK for PHP loaded in place from a Composer vendor/ folder outside the repository
//    (what `make test` runs; see docs/laravel.md).
//
// The app's own classes are loaded here either way, so no composer dump is needed for them.

$autoload = getenv('LARAVEL_VENDOR_AUTOLOAD') ?: null;
if ($autoload === null) {
    $vendor = __DIR__.'/../vendor/autoload.php';
    $autoload = is_file($vendor) ? $vendor : __DIR__.'/system.php';
}
if (! is_file($autoload)) {
    fwrite(STDERR, "no autoloader at {$autoload}: LARAVEL_VENDOR_AUTOLOAD must name one that loads "
        ."laravel/framework and aws/aws-sdk-php\n");
    exit(3);
}
require $autoload;

spl_autoload_register(function (string $class): void {
    if (str_starts_with($class, 'App\\')) {
        $file = __DIR__.'/../app/'.str_replace('\\', '/', substr($class, 4)).'.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
