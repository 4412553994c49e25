package io.nucx.transport;

/**
 * Whether a transport can run here, and if not, a reason a person can act on
 * ("libibverbs.so.1 not found", "io_uring: kernel 5.4 < 5.9").
 */
public record Availability(boolean isAvailable, String reason) {
    private static final Availability AVAILABLE = new Availability(true, "");

    public static Availability available() {
        return AVAILABLE;
    }

    public static Availability unavailable(String reason) {
        return new Availability(false, reason);
    }

    @Override
    public String toString() {
        return isAvailable ? "available" : "unavailable: " + reason;
    }
}
