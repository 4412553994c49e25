/**
 * Typed configuration, declared per layer (UCX's config tables, Aeron's {@code Configuration} and
 * {@code Context.conclude()}): a {@link io.nucx.transport.config.ConfigEntry} is one {@code NUCX_*} setting with its
 * name, default, one-line doc and typed parser with bounds; a {@link io.nucx.transport.config.ConfigTable} is one
 * layer's entries plus its cross-setting checks; {@link io.nucx.transport.config.ConfigSchema} finds every table
 * (ServiceLoader, and each transport's through the Transport SPI). {@link io.nucx.transport.NucxConfig} holds the
 * values and parses each once; docs/CONFIG.md is generated from the tables.
 */
package io.nucx.transport.config;
