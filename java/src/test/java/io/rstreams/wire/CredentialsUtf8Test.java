package io.rstreams.wire;

import static org.testng.Assert.assertThrows;

import org.testng.annotations.Test;

/**
 * PROTOCOL.md §2.2: a string is strict UTF-8, invalid bytes are an error; §15.1/§15.5: malformed
 * credentials are a connection error. The decoder refuses the bytes, never replaces them.
 */
public class CredentialsUtf8Test {
    @Test(timeOut = 10_000)
    public void aTokenThatIsNotUtf8IsMalformed() {
        byte[] payload = {1, 2, (byte) 0xC3, (byte) 0x28}; // kind 1, token of 2 bytes: an invalid sequence
        assertThrows(ProtocolException.class, () -> Credentials.decode(payload, 0, payload.length));
    }
}
