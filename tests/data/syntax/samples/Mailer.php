<?php

declare(strict_types=1);

namespace App\Mail;

use App\Contracts\Transport;

const DEFAULT_FROM = 'noreply@example.com';

interface Renderer
{
    public function render(string $template, array $data): string;
}

trait Loggable
{
    protected function log(string $message): void
    {
        error_log($message);
    }
}

enum Priority: int
{
    case Low = 0;
    case High = 1;
}

/**
 * Sends templated mail through a transport.
 */
final class Mailer
{
    use Loggable;

    public const MAX_RECIPIENTS = 50;

    private array $queue = [];

    public function __construct(
        private Transport $transport,
        private Renderer $renderer,
    ) {
    }

    public function send(string $to, string $template, array $data = []): bool
    {
        $body = $this->renderer->render($template, $data);
        $this->log("sending to {$to}");
        return $this->transport->deliver($to, $body);
    }

    public static function fromConfig(array $config): self
    {
        return new self($config['transport'], $config['renderer']);
    }
}

function mailer(): Mailer
{
    static $instance = null;
    return $instance;
}
