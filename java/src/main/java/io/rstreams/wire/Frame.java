package io.rstreams.wire;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * One RS.io message (PROTOCOL.md §3). The same records are sent and received; each checks its
 * fields when built (a wrong argument is an {@link IllegalArgumentException} at once).
 * Integers are unsigned 64-bit values held in {@code long}s; byte arrays are not copied.
 */
public sealed interface Frame {

    /** The message type byte (§3). */
    int type();

    /** clientHello (0x01) or serverHello (0x02): version 0 and the extension ids offered (§4). */
    record Hello(boolean fromServer, int version, List<Long> extensions) implements Frame {
        /** Checks the fields. */
        public Hello {
            if (version < 0 || version > 0xFF) {
                throw new IllegalArgumentException("a hello's version is a u8, got " + version);
            }
            extensions = List.copyOf(extensions);
        }

        @Override
        public int type() {
            return fromServer ? FrameType.SERVER_HELLO : FrameType.CLIENT_HELLO;
        }
    }

    /** goodbye (0x03), §9. */
    record Goodbye(String reason) implements Frame {
        /** Checks the fields. */
        public Goodbye {
            Objects.requireNonNull(reason, "reason");
        }

        @Override
        public int type() {
            return FrameType.GOODBYE;
        }
    }

    /** subscribe (0x04): the subscriber's id for a new subscription to {@code publisher}, §5. */
    record Subscribe(String publisher, long subscriber, long initialDemand) implements Frame {
        /** Checks the fields. */
        public Subscribe {
            Objects.requireNonNull(publisher, "publisher");
        }

        @Override
        public int type() {
            return FrameType.SUBSCRIBE;
        }
    }

    /** request (0x05), §6. */
    record Request(long subscriber, long demand) implements Frame {
        @Override
        public int type() {
            return FrameType.REQUEST;
        }
    }

    /** cancel (0x06), §5.4. */
    record Cancel(long subscriber) implements Frame {
        @Override
        public int type() {
            return FrameType.CANCEL;
        }
    }

    /** onSubscribe (0x07): elementSize 0 means length-prefixed elements, n &gt; 0 raw n-byte ones (§7). */
    record OnSubscribe(long subscriber, long elementSize) implements Frame {
        @Override
        public int type() {
            return FrameType.ON_SUBSCRIBE;
        }
    }

    /** onNext (0x08): one element; its encoding depends on the subscription's elementSize (§7). */
    record OnNext(long subscriber, byte[] element) implements Frame {
        /** Checks the fields. */
        public OnNext {
            Objects.requireNonNull(element, "element");
        }

        @Override
        public int type() {
            return FrameType.ON_NEXT;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof OnNext other && other.subscriber == subscriber && Arrays.equals(other.element, element);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(subscriber) * 31 + Arrays.hashCode(element);
        }

        @Override
        public String toString() {
            return "OnNext[subscriber=" + Long.toUnsignedString(subscriber) + ", element=" + element.length + " bytes]";
        }
    }

    /** onNextPacked (0x09): {@code count} fixed-size elements back to back (§7). */
    record OnNextPacked(long subscriber, long count, byte[] elements) implements Frame {
        /** Checks the fields. */
        public OnNextPacked {
            Objects.requireNonNull(elements, "elements");
        }

        @Override
        public int type() {
            return FrameType.ON_NEXT_PACKED;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof OnNextPacked other && other.subscriber == subscriber && other.count == count
                    && Arrays.equals(other.elements, elements);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(subscriber) * 31 + Arrays.hashCode(elements);
        }

        @Override
        public String toString() {
            return "OnNextPacked[subscriber=" + Long.toUnsignedString(subscriber) + ", count=" + count + "]";
        }
    }

    /** onNextPart (0x0A) or, with {@code last}, onNextLastPart (0x0B): a piece of a split element (§8). */
    record OnNextPart(boolean last, long subscriber, long elementId, byte[] data) implements Frame {
        /** Checks the fields. */
        public OnNextPart {
            Objects.requireNonNull(data, "data");
        }

        @Override
        public int type() {
            return last ? FrameType.ON_NEXT_LAST_PART : FrameType.ON_NEXT_PART;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof OnNextPart other && other.last == last && other.subscriber == subscriber
                    && other.elementId == elementId && Arrays.equals(other.data, data);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(subscriber) * 31 + Arrays.hashCode(data);
        }

        @Override
        public String toString() {
            return (last ? "OnNextLastPart" : "OnNextPart") + "[subscriber=" + Long.toUnsignedString(subscriber)
                    + ", element=" + elementId + ", " + data.length + " bytes]";
        }
    }

    /** onComplete (0x0C), also the acknowledgement of a cancel (§5.4). */
    record OnComplete(long subscriber) implements Frame {
        @Override
        public int type() {
            return FrameType.ON_COMPLETE;
        }
    }

    /** onError (0x0D): the publisher failed or refused the subscription. */
    record OnError(long subscriber, String error) implements Frame {
        /** Checks the fields. */
        public OnError {
            Objects.requireNonNull(error, "error");
        }

        @Override
        public int type() {
            return FrameType.ON_ERROR;
        }
    }

    /** Any extension message (0x80-0xFF): type, length, payload (§4.4). */
    record Extension(int type, byte[] payload) implements Frame {
        /** Checks the fields. */
        public Extension {
            if (type < FrameType.FIRST_EXTENSION || type > 0xFF) {
                throw new IllegalArgumentException("extension message types are 0x80..0xFF, got " + type);
            }
            Objects.requireNonNull(payload, "payload");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Extension other && other.type == type && Arrays.equals(other.payload, payload);
        }

        @Override
        public int hashCode() {
            return type * 31 + Arrays.hashCode(payload);
        }

        @Override
        public String toString() {
            return String.format("Extension[type=0x%02x, %d bytes]", type, payload.length);
        }
    }
}
