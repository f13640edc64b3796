package io.rstreams.wire;

import static org.testng.Assert.assertEquals;

import org.testng.annotations.Test;

/**
 * The refusal of a subscribe whose credentials were refused (PROTOCOL.md §15.4, code 3) quotes the
 * name's path as §5.5 does, byte for byte as Python and JavaScript send it (tests/net/test_auth.py,
 * js gate.test.mjs): up to its first '?', as written, in plain single quotes; a quote or a control
 * character is not escaped, the query is not shown.
 */
public class AuthRefusalTextTest {
    @Test(timeOut = 10_000)
    public void quotesThePathAsWritten() {
        assertEquals(AuthGate.unauthenticated("it's\u0001/a%20b?key=x'y"),
                "unauthenticated: subscribe to 'it's\u0001/a%20b' needs valid credentials (PROTOCOL.md §15.4)");
        assertEquals(AuthGate.unauthenticated("news"),
                "unauthenticated: subscribe to 'news' needs valid credentials (PROTOCOL.md §15.4)");
        assertEquals(AuthGate.unauthenticated("?x=1"),
                "unauthenticated: subscribe to '' needs valid credentials (PROTOCOL.md §15.4)");
    }

    /** The refusal of the authorize hook (§15.4, code 4) quotes the path the same way. */
    @Test(timeOut = 10_000)
    public void theUnauthorizedRefusalQuotesThePathAsWritten() {
        assertEquals(AuthGate.unauthorized("it's\u0001/a%20b?key=x'y"),
                "unauthorized: subscribe to 'it's\u0001/a%20b' is not allowed for this principal (PROTOCOL.md §15.4)");
        assertEquals(AuthGate.unauthorized("vault"),
                "unauthorized: subscribe to 'vault' is not allowed for this principal (PROTOCOL.md §15.4)");
    }
}
