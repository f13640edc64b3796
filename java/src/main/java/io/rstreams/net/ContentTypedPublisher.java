package io.rstreams.net;

import io.rstreams.wire.ContentTypes;
import java.util.Objects;
import java.util.concurrent.Flow;

/**
 * A publisher of byte elements that states their media type (extension content-types,
 * PROTOCOL.md §17). A route's factory may return one, as it may return a
 * {@link FixedSizePublisher}: its subscription then announces this type in a contentType right
 * before onSubscribe to a peer that offers the extension, whatever the route's codec says. A
 * factory can so answer each subscribe with the type it serves it in (chosen from the
 * subscribe's {@code accept} metadata, say, §18). As JavaScript's {@code withContentType}.
 */
public interface ContentTypedPublisher extends Flow.Publisher<byte[]> {
    /** The elements' media type (§17.1), e.g. {@code application/json}. */
    String contentType();

    /**
     * {@code publisher}, stating {@code mediaType} for its elements; a {@link FixedSizePublisher}
     * stays one (its elementSize is kept).
     *
     * @throws IllegalArgumentException naming the rule if {@code mediaType} is not a media type of §17.1
     */
    static ContentTypedPublisher withContentType(Flow.Publisher<byte[]> publisher, String mediaType) {
        Objects.requireNonNull(publisher, "publisher");
        String type = ContentTypes.check(mediaType);
        if (publisher instanceof FixedSizePublisher fixed) {
            return new Fixed(fixed, type);
        }
        return new ContentTypedPublisher() {
            @Override
            public String contentType() {
                return type;
            }

            @Override
            public void subscribe(Flow.Subscriber<? super byte[]> subscriber) {
                publisher.subscribe(subscriber);
            }
        };
    }

    /** A fixed-size publisher with a media type. */
    final class Fixed implements ContentTypedPublisher, FixedSizePublisher {
        private final FixedSizePublisher publisher;
        private final String type;

        private Fixed(FixedSizePublisher publisher, String type) {
            this.publisher = publisher;
            this.type = type;
        }

        @Override
        public String contentType() {
            return type;
        }

        @Override
        public int elementSize() {
            return publisher.elementSize();
        }

        @Override
        public void subscribe(Flow.Subscriber<? super byte[]> subscriber) {
            publisher.subscribe(subscriber);
        }
    }
}
