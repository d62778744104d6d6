/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Definers for the vendor stand-ins' entry points, one per return
 * convention of rdma-core's direct-verbs libraries.  Each answers what the
 * real library answers when the object or device it is given is not one of
 * its own: every device here is softverbs0, so no call can succeed and no
 * object of the vendor's can exist.
 *
 * Each use names the function's return type and parameters (the macro's
 * variable arguments) exactly as the vendor's installed header declares
 * them; that header is included
 * first, so the compiler rejects any definition whose type differs from
 * the declaration.  (Parameter names are required in a C11 definition and
 * are otherwise unused.)  The symbol versions are in the library's map.
 */
#ifndef SV_VENDOR_STUB_H
#define SV_VENDOR_STUB_H

#include <errno.h>
#include <stddef.h>

#define SV_EXPORT __attribute__((visibility("default")))

/* Bind an implementation to a non-default (compat) symbol version. */
#define SV_COMPAT_SYMBOL(impl, name, ver) \
	__asm__(".symver " #impl "," #name "@" ver)

/* Constructors and pointer lookups: NULL, errno EOPNOTSUPP. */
#define SV_STUB_NULL(type, name, ...)    \
	SV_EXPORT type name(__VA_ARGS__) \
	{                                \
		errno = EOPNOTSUPP;      \
		return NULL;             \
	}

/*
 * "0 on success, or the value of errno on failure": EOPNOTSUPP returned,
 * errno left alone (the real functions do not set it on this path).
 */
#define SV_STUB_ERRNO(name, ...)        \
	SV_EXPORT int name(__VA_ARGS__) \
	{                               \
		return EOPNOTSUPP;      \
	}

/* The same, for functions that also set errno to the value they return. */
#define SV_STUB_ERRNO_SET(name, ...)    \
	SV_EXPORT int name(__VA_ARGS__) \
	{                               \
		errno = EOPNOTSUPP;     \
		return EOPNOTSUPP;      \
	}

/* "-1 and errno" (int or ssize_t results that count or name something). */
#define SV_STUB_MINUS1(type, name, ...)  \
	SV_EXPORT type name(__VA_ARGS__) \
	{                                \
		errno = EOPNOTSUPP;      \
		return -1;               \
	}

/* "-errno on error". */
#define SV_STUB_NEG_ERRNO(name, ...)    \
	SV_EXPORT int name(__VA_ARGS__) \
	{                               \
		return -EOPNOTSUPP;     \
	}

/* Releases and setters of objects that cannot exist: nothing to do. */
#define SV_STUB_VOID(name, ...)          \
	SV_EXPORT void name(__VA_ARGS__) \
	{                                \
	}

/*
 * The same definers for functions that the oldest headers softverbs builds
 * against (rdma-core 44) do not declare, or that newer headers turn into
 * macros (mlx5dv_create_flow since rdma-core 63): the definition gets a C
 * name of its own (sv_NAME) and the exported name through an asm label, so
 * it clashes with no header's declaration or macro.  Their parameter types
 * are the header's where every supported header has them, void * for
 * structs that only newer headers define.
 */
#define SV_ASM_DECL(type, name, ...) \
	SV_EXPORT type sv_##name(__VA_ARGS__) __asm__(#name);

#define SV_STUB_NULL_AS(type, name, ...)     \
	SV_ASM_DECL(type, name, __VA_ARGS__) \
	type sv_##name(__VA_ARGS__)          \
	{                                    \
		errno = EOPNOTSUPP;          \
		return NULL;                 \
	}

#define SV_STUB_ERRNO_AS(name, ...)         \
	SV_ASM_DECL(int, name, __VA_ARGS__) \
	int sv_##name(__VA_ARGS__)          \
	{                                   \
		return EOPNOTSUPP;          \
	}

#define SV_STUB_MINUS1_AS(type, name, ...)   \
	SV_ASM_DECL(type, name, __VA_ARGS__) \
	type sv_##name(__VA_ARGS__)          \
	{                                    \
		errno = EOPNOTSUPP;          \
		return -1;                   \
	}

#define SV_STUB_NEG_ERRNO_AS(name, ...)     \
	SV_ASM_DECL(int, name, __VA_ARGS__) \
	int sv_##name(__VA_ARGS__)          \
	{                                   \
		return -EOPNOTSUPP;         \
	}

#define SV_STUB_VOID_AS(name, ...)           \
	SV_ASM_DECL(void, name, __VA_ARGS__) \
	void sv_##name(__VA_ARGS__)          \
	{                                    \
	}

#endif
