<?php

// Where the framework and the AWS SDK come from: composer's vendor/autoload.php (the compose
// profile's image runs composer install), or, when LARAVEL_VENDOR_AUTOLOAD names a file, that
// autoloader instead (a system-wide Laravel plus an AWS SDK kept outside the repository). The
// app's own classes are loaded here either way, so no composer dump is needed for them.

$autoload = getenv('LARAVEL_VENDOR_AUTOLOAD') ?: __DIR__.'/../vendor/autoload.php';
if (! is_file($autoload)) {
    fwrite(STDERR, "no autoloader at {$autoload}: run composer install in tests/smoke/laravel, "
        ."or set LARAVEL_VENDOR_AUTOLOAD to one that loads laravel/framework and aws/aws-sdk-php\n");
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
