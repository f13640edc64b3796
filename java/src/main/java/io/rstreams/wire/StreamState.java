package io.rstreams.wire;

import java.util.EnumMap;
import java.util.Map;

/**
 * One subscription's state, the same at both ends (PROTOCOL.md §5.2). Every signal of the
 * subscription, sent or received, goes through {@link #after}; a pair missing from the table
 * is a violation: refused locally when sending, a connection error when receiving.
 * IDLE means the id has no subscription.
 */
public enum StreamState {
    IDLE, SUBSCRIBED, ACTIVE, CANCELLED, CLOSED;

    /** The signals of a subscription; split parts count as ON_NEXT. */
    public enum Signal { SUBSCRIBE, REQUEST, CANCEL, ON_SUBSCRIBE, ON_NEXT, ON_COMPLETE, ON_ERROR }

    private static final Map<StreamState, Map<Signal, StreamState>> TABLE = new EnumMap<>(StreamState.class);

    private static void allow(StreamState from, Signal signal, StreamState to) {
        TABLE.computeIfAbsent(from, k -> new EnumMap<>(Signal.class)).put(signal, to);
    }

    static {
        allow(IDLE, Signal.SUBSCRIBE, SUBSCRIBED);
        allow(SUBSCRIBED, Signal.REQUEST, SUBSCRIBED); // demand may come before onSubscribe
        allow(SUBSCRIBED, Signal.CANCEL, CANCELLED);
        allow(SUBSCRIBED, Signal.ON_SUBSCRIBE, ACTIVE);
        allow(SUBSCRIBED, Signal.ON_COMPLETE, CLOSED);
        allow(SUBSCRIBED, Signal.ON_ERROR, CLOSED); // a refusal: unknown name, limits
        allow(ACTIVE, Signal.REQUEST, ACTIVE);
        allow(ACTIVE, Signal.CANCEL, CANCELLED);
        allow(ACTIVE, Signal.ON_NEXT, ACTIVE); // within demand only, §6.3
        allow(ACTIVE, Signal.ON_COMPLETE, CLOSED);
        allow(ACTIVE, Signal.ON_ERROR, CLOSED);
        allow(CANCELLED, Signal.REQUEST, CANCELLED); // no-op, rule 3.6
        allow(CANCELLED, Signal.CANCEL, CANCELLED); // no-op, rule 3.7
        allow(CANCELLED, Signal.ON_SUBSCRIBE, CANCELLED); // in flight: dropped
        allow(CANCELLED, Signal.ON_NEXT, CANCELLED); // in flight: dropped
        allow(CANCELLED, Signal.ON_COMPLETE, CLOSED); // the acknowledgement, §5.4
        allow(CANCELLED, Signal.ON_ERROR, CLOSED);
        allow(CLOSED, Signal.SUBSCRIBE, SUBSCRIBED); // id reuse after the terminal signal, §5.3
    }

    /** The state after {@code signal}, or {@code null} if the signal is not allowed here. */
    public StreamState after(Signal signal) {
        Map<Signal, StreamState> row = TABLE.get(this);
        return row == null ? null : row.get(signal);
    }
}
