package io.nucx.transport;

/** A device a transport can open an iface on (a network interface, "memory" for shm/self). */
public record Device(String name, String type) {
}
