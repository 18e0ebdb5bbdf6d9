<?php

namespace App\Support;

// One JSON line per job attempt, appended by the worker process and read by the smoke command.

class RunLog
{
    public static function path(): string
    {
        return storage_path('okuri-smoke/runs.jsonl');
    }

    public static function reset(): void
    {
        self::makeDirectory();
        file_put_contents(self::path(), '');
    }

    public static function append(array $entry): void
    {
        self::makeDirectory();  // a worker may run before anything reset the log
        file_put_contents(self::path(), json_encode($entry)."\n", FILE_APPEND | LOCK_EX);
    }

    /** @return list<array<string, mixed>> */
    public static function entries(): array
    {
        if (! is_file(self::path())) {
            return [];
        }
        $lines = array_filter(explode("\n", (string) file_get_contents(self::path())));

        return array_values(array_map(fn (string $line) => json_decode($line, true), $lines));
    }

    private static function makeDirectory(): void
    {
        $dir = dirname(self::path());
        if (! is_dir($dir)) {
            mkdir($dir, 0777, true);
        }
    }
}
