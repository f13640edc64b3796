package io.rstreams.testing;

/** The end of a test class: its servers, clients and connections closed in one call. */
public final class Closing {
    private Closing() {}

    /**
     * Closes each resource not null, in the order given (a connection before its client, a client
     * before the server it reached), every one of them even when one throws: the first exception
     * is thrown after the last close, the others suppressed in it.
     */
    public static void all(AutoCloseable... resources) throws Exception {
        Exception first = null;
        for (AutoCloseable resource : resources) {
            if (resource == null) {
                continue;
            }
            try {
                resource.close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
