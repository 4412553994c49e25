/*
 * A stand-in for libmlx5.so.1 next to the verbs emulator, for running UCX's own tools (ucx_perftest, ucx_info)
 * over the emulated devices. Debian's UCX links libuct_ib against libmlx5, and the real libmlx5 needs
 * libibverbs' private provider ABI (IBVERBS_PRIVATE_34), which the emulator does not offer. With this library
 * UCX asks mlx5dv_is_supported(), hears "no", and drives the device through plain verbs (rc_verbs, ud_verbs).
 * Every other entry point fails with EOPNOTSUPP; UCX does not call them for a device that is not mlx5.
 */
#include <errno.h>
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int mlx5dv_is_supported(void *device)
{
    (void)device;
    return 0;
}

#define UNSUPPORTED(name) EXPORT void *name(void) { errno = EOPNOTSUPP; return NULL; }

UNSUPPORTED(mlx5dv_create_cq)
UNSUPPORTED(mlx5dv_create_qp)
UNSUPPORTED(mlx5dv_init_obj)
UNSUPPORTED(mlx5dv_open_device)
UNSUPPORTED(mlx5dv_devx_alloc_uar)
UNSUPPORTED(mlx5dv_devx_free_uar)
UNSUPPORTED(mlx5dv_devx_general_cmd)
UNSUPPORTED(mlx5dv_devx_obj_create)
UNSUPPORTED(mlx5dv_devx_obj_destroy)
UNSUPPORTED(mlx5dv_devx_obj_modify)
UNSUPPORTED(mlx5dv_devx_obj_query)
UNSUPPORTED(mlx5dv_devx_umem_reg)
UNSUPPORTED(mlx5dv_devx_umem_dereg)
UNSUPPORTED(mlx5dv_devx_qp_modify)
UNSUPPORTED(mlx5dv_devx_qp_query)
UNSUPPORTED(mlx5dv_devx_create_event_channel)
UNSUPPORTED(mlx5dv_devx_destroy_event_channel)
UNSUPPORTED(mlx5dv_devx_get_event)
UNSUPPORTED(mlx5dv_devx_subscribe_devx_event)
UNSUPPORTED(mlx5dv_query_device)
