/*
 * The shm link's place in the engine (shmpath.c, link/shm.h): path choice
 * at RTR, transmit into and drain rings, the progress thread's sleep words.
 */
#ifndef SV_ENGINE_SHMPATH_H
#define SV_ENGINE_SHMPATH_H

#include <stdbool.h>

#include "engine/qpe.h"

void sv_shm_engine_init(struct sv_engine *eng);
void sv_shm_sock_open(struct sv_engine *eng, struct sv_sock *s);
void sv_shm_sock_close(struct sv_sock *s);
void sv_shm_qp_created(struct sv_qp_engine *qe);
void sv_shm_qp_modified(struct sv_qp_engine *qe, enum ibv_qp_state new_state,
			enum ibv_qp_state old_state);
void sv_shm_qp_destroyed(struct sv_qp_engine *qe);
void sv_shm_tx(struct sv_engine *eng, struct sv_tx *const *t,
	       unsigned int n);
void sv_shm_rx(struct sv_engine *eng, struct sv_sock *s);
bool sv_shm_rx_udp_due(struct sv_engine *eng, struct sv_sock *s);
void sv_shm_rx_udp_seen(struct sv_qp_engine *qe);
bool sv_shm_sleep(struct sv_engine *eng);
void sv_shm_wake(struct sv_engine *eng);
const char *sv_shm_path(const struct sv_qp_engine *qe);

#endif
