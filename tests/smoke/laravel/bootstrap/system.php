<?php

// Laravel and the AWS SDK for PHP without composer: Debian's php-laravel-framework and Guzzle
// packages, found on PHP's include_path with their own autoloaders, and the SDK (with
// jmespath.php and aws-crt-php) read in place from a Composer vendor/ folder that stays outside
// the repository: AWS_SDK_PHP_VENDOR, by default ../shared/clients/aws-sdk-php/vendor beside
// the checkout. Exits 3 saying what is missing, so callers can tell "cannot run" from "failed".

foreach (['Illuminate/autoload.php' => 'php-laravel-framework', 'GuzzleHttp/autoload.php' => 'php-guzzlehttp-guzzle'] as $file => $package) {
    if (stream_resolve_include_path($file) === false) {
        fwrite(STDERR, "{$file} is not on PHP's include_path: apt-get install {$package} (make clients)\n");
        exit(3);
    }
    require_once $file;
}

$vendor = getenv('AWS_SDK_PHP_VENDOR') ?: dirname(__DIR__, 4).'/../shared/clients/aws-sdk-php/vendor';
if (! is_file($vendor.'/aws/aws-sdk-php/src/Sdk.php')) {
    fwrite(STDERR, "the AWS SDK for PHP is not at {$vendor} (set AWS_SDK_PHP_VENDOR to a Composer "
        ."vendor/ folder holding aws/aws-sdk-php, or run composer install in tests/smoke/laravel)\n");
    exit(3);
}

// The SDK's and jmespath's PSR-4 roots from their composer.json files; aws-crt-php declares a
// classmap of src/, whose files follow the same namespace-to-path layout.
$roots = [
    'Aws\\' => $vendor.'/aws/aws-sdk-php/src/',
    'AWS\\CRT\\' => $vendor.'/aws/aws-crt-php/src/AWS/CRT/',
    'JmesPath\\' => $vendor.'/mtdowling/jmespath.php/src/',
];
spl_autoload_register(function (string $class) use ($roots): void {
    foreach ($roots as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir.str_replace('\\', '/', substr($class, strlen($prefix))).'.php';
            if (is_file($file)) {
                require $file;
            }

            return;
        }
    }
});
// The files composer's "autoload.files" would load.
require_once $vendor.'/aws/aws-sdk-php/src/functions.php';
require_once $vendor.'/mtdowling/jmespath.php/src/JmesPath.php';
