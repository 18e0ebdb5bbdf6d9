<?php

// The queue worker reads its restart signal from the cache; one process's memory is enough here.

return [
    'default' => 'array',

    'stores' => [
        'array' => ['driver' => 'array', 'serialize' => false],
    ],

    'prefix' => 'okuri_smoke',
];
