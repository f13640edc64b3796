package io.rstreams.testing;

/** Hex strings as the vectors write them ("01 0a ff", spaces optional). */
public final class Hex {
    private Hex() {}

    public static byte[] decode(String hex) {
        String h = hex.replace(" ", "");
        byte[] out = new byte[h.length() / 2];
        for (int k = 0; k < out.length; k++) {
            out[k] = (byte) Integer.parseInt(h.substring(2 * k, 2 * k + 2), 16);
        }
        return out;
    }

    public static String encode(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            if (sb.length() > 0) {
                sb.append(' ');
            }
            sb.append(String.format("%02x", x & 0xFF));
        }
        return sb.toString();
    }
}
