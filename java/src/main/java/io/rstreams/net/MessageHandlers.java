package io.rstreams.net;

import io.rstreams.wire.Messages;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;

/**
 * The message handlers one end offers (extension messages, PROTOCOL.md §20), by name or
 * pattern as routes are ({@link Routes}: exact names first, then {@code {field}} patterns in the
 * order added, the query and the fields passed on), and the credit it grants each peer
 * ({@code maxMessagesInFlight}, §20.3). Built by the builders, shared by their connections.
 */
final class MessageHandlers {
    /** A handler: null when it is done as it returns, else a stage whose completion ends its handling. */
    interface Handler extends Function<Message, CompletionStage<?>> {}

    private final Routes names = new Routes();
    private final Map<Routes.Route, Handler> handlers = new IdentityHashMap<>();
    private int window = Messages.DEFAULT_WINDOW;

    void add(String pattern, Handler handler) {
        Routes.Route route = new Routes.Route(pattern, 0, null);
        names.add(route);
        handlers.put(route, handler);
    }

    void window(int messages) {
        if (messages < 1) {
            throw new IllegalArgumentException("maxMessagesInFlight must be >= 1, got " + messages + " (PROTOCOL.md §20.3)");
        }
        window = messages;
    }

    int window() {
        return window;
    }

    /** What {@code name} resolves to (its route's factory is unused), or null: no handler has it. */
    Routes.Match resolve(String name, RsioConnection connection) {
        return names.resolve(name, connection);
    }

    Handler handler(Routes.Match match) {
        return handlers.get(match.route());
    }
}
