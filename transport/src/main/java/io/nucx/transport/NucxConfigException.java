package io.nucx.transport;

/** A configuration value that cannot be used; the message names the variable and the value. */
public final class NucxConfigException extends IllegalArgumentException {
    public NucxConfigException(String message) {
        super(message);
    }
}
