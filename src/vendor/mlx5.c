/*
 * libmlx5.so.1 stand-in: the mlx5 direct-verbs entry points that Debian's
 * perftest binaries import, so that those binaries load on softverbs.
 *
 * rdma-core's real libmlx5 is a provider: it needs libibverbs' private
 * provider interface (IBVERBS_PRIVATE_34), which our libibverbs does not
 * offer, so it cannot be loaded next to it.  perftest only calls these
 * functions for Mellanox devices (DC transport, AES-XTS, ...); softverbs0 is
 * not one, so every function answers exactly what the real library answers
 * for a device that is not an mlx5 device: constructors return NULL with
 * errno EOPNOTSUPP, int functions return EOPNOTSUPP (their man pages:
 * "0 on success or the value of errno on failure").
 *
 * The symbol set and versions are in libmlx5.map; tests/vendor checks them
 * against every perftest binary.
 */
#include <errno.h>
#include <stddef.h>

#include <infiniband/mlx5dv.h>

#define SV_EXPORT __attribute__((visibility("default")))

/* MLX5_1.3 */
SV_EXPORT struct ibv_qp *
mlx5dv_create_qp(struct ibv_context *context,
		 struct ibv_qp_init_attr_ex *qp_attr,
		 struct mlx5dv_qp_init_attr *mlx5_qp_attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* MLX5_1.7 */
SV_EXPORT struct ibv_context *
mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SV_EXPORT int mlx5dv_devx_general_cmd(struct ibv_context *context,
				      const void *in, size_t inlen, void *out,
				      size_t outlen)
{
	return EOPNOTSUPP;
}

/* MLX5_1.10 */
SV_EXPORT struct mlx5dv_mkey *
mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *mkey_init_attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* No mkey can exist (mlx5dv_create_mkey never succeeds): nothing to destroy. */
SV_EXPORT int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey)
{
	return EOPNOTSUPP;
}

/*
 * The real function is a pointer conversion that cannot fail, valid only for
 * a QP made by mlx5dv_create_qp.  No such QP can exist here, so there is no
 * mlx5dv_qp_ex to return: NULL, errno EOPNOTSUPP, rather than a pointer into
 * some other provider's QP.
 */
SV_EXPORT struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* MLX5_1.21 */
SV_EXPORT int mlx5dv_crypto_login(struct ibv_context *context,
				  struct mlx5dv_crypto_login_attr *login_attr)
{
	return EOPNOTSUPP;
}

SV_EXPORT struct mlx5dv_dek *
mlx5dv_dek_create(struct ibv_context *context,
		  struct mlx5dv_dek_init_attr *init_attr)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* No DEK can exist (mlx5dv_dek_create never succeeds): nothing to destroy. */
SV_EXPORT int mlx5dv_dek_destroy(struct mlx5dv_dek *dek)
{
	return EOPNOTSUPP;
}
