package io.rstreams.net;

import java.util.Objects;
import java.util.concurrent.Flow;
import java.util.function.Function;

/** A publisher of T seen as a publisher of its encodings. */
final class Encoding {
    private Encoding() {}

    static <T> Routes.Route route(String pattern, Codec<T> codec, Function<PublisherRequest, Flow.Publisher<T>> factory) {
        Objects.requireNonNull(codec, "codec");
        Objects.requireNonNull(factory, "factory");
        String type = codec.mediaType();
        if (type != null) {
            io.rstreams.wire.ContentTypes.check(type); // a codec of the user's own: refused at the route, not at each subscribe
        }
        if (codec == Codec.BYTES) {
            @SuppressWarnings("unchecked")
            Function<PublisherRequest, Flow.Publisher<byte[]>> raw = (Function<PublisherRequest, Flow.Publisher<byte[]>>) (Function<?, ?>) factory;
            return new Routes.Route(pattern, 0, raw);
        }
        return new Routes.Route(pattern, codec.elementSize(), codec.mediaType(), request -> {
            Flow.Publisher<T> p = factory.apply(request);
            return p == null ? null : encoded(p, codec);
        });
    }

    static <T> Flow.Publisher<byte[]> encoded(Flow.Publisher<T> source, Codec<T> codec) {
        return mapped(source, codec::encode);
    }

    /**
     * {@code source} with each element passed through {@code convert} (a codec's encode or
     * decode): a conversion that throws cancels the source and fails the subscriber with that
     * error, and nothing reaches the subscriber after it.
     */
    static <T, U> Flow.Publisher<U> mapped(Flow.Publisher<T> source, Function<? super T, ? extends U> convert) {
        return subscriber -> source.subscribe(new Flow.Subscriber<T>() {
            private Flow.Subscription subscription;
            private boolean done;

            @Override
            public void onSubscribe(Flow.Subscription s) {
                subscription = s;
                subscriber.onSubscribe(s);
            }

            @Override
            public void onNext(T item) {
                if (done) {
                    return;
                }
                U value;
                try {
                    value = convert.apply(item);
                } catch (RuntimeException e) {
                    done = true;
                    subscription.cancel();
                    subscriber.onError(e);
                    return;
                }
                subscriber.onNext(value);
            }

            @Override
            public void onError(Throwable t) {
                if (done) {
                    return;
                }
                done = true;
                subscriber.onError(t);
            }

            @Override
            public void onComplete() {
                if (done) {
                    return;
                }
                done = true;
                subscriber.onComplete();
            }
        });
    }
}
