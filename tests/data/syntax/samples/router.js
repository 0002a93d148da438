// A tiny HTTP router with middleware, written in plain ES modules.
import { createServer } from "node:http";

export const DEFAULT_PORT = 8080;
const METHODS = ["GET", "POST", "PUT", "DELETE"];

/**
 * Splits a path into segments, dropping empty ones.
 */
function segments(path) {
  return path.split("/").filter(Boolean);
}

export class Router {
  #routes = [];

  constructor(prefix = "") {
    this.prefix = prefix;
  }

  add(method, pattern, handler) {
    this.#routes.push({ method, parts: segments(this.prefix + pattern), handler });
    return this;
  }

  static fromTable(table) {
    const router = new Router();
    for (const [key, handler] of Object.entries(table)) {
      const [method, pattern] = key.split(" ");
      router.add(method, pattern, handler);
    }
    return router;
  }

  async handle(request, response) {
    const parts = segments(request.url);
    const route = this.#routes.find((r) => r.method === request.method && match(r.parts, parts));
    if (!route) {
      response.statusCode = 404;
      return response.end();
    }
    return route.handler(request, response);
  }
}

const match = (pattern, parts) =>
  pattern.length === parts.length && pattern.every((p, i) => p.startsWith(":") || p === parts[i]);

export default function serve(router, port = DEFAULT_PORT) {
  const server = createServer((req, res) => router.handle(req, res));
  server.listen(port);
  return server;
}

function* idGenerator(start) {
  let id = start;
  while (true) yield id++;
}

module.exports.helpers = { segments, match };
