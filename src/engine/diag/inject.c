/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Fault injection (inject.h, docs/faults.md): the spec's parser, the
 * decisions for packets and request messages, and the packets held back
 * (delay, reorder) until they are due.
 *
 * A decision is a hash of (seed, rule, k) for the k-th packet or message
 * the rule matches, not a shared random stream: rules do not disturb each
 * other's draws, and the same traffic with the same seed meets the same
 * faults.
 */
#include "engine/diag/inject.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/transport/eng.h"
#include "engine/engine.h"
#include "engine/transport/links.h"
#include "engine/transport/qpe.h"
#include "engine/transport/recv.h"
#include "engine/transport/stats.h"
#include "proto/icrc.h"
#include "util/env.h"
#include "util/log.h"

static const char *const kind_names[SV_INJ_NKINDS] = {
	[SV_INJ_DROP] = "drop",	      [SV_INJ_DUP] = "dup",
	[SV_INJ_DELAY] = "delay",     [SV_INJ_REORDER] = "reorder",
	[SV_INJ_CORRUPT] = "corrupt", [SV_INJ_RNR] = "rnr",
	[SV_INJ_ACCESS] = "access",   [SV_INJ_RETRY] = "retry",
	[SV_INJ_PULL] = "pull",
};

static bool is_pkt_kind(enum sv_inj_kind k)
{
	return k < SV_INJ_RNR;
}

/* ---- the spec ----------------------------------------------------------- */

#define DEFAULT_DELAY_MS 10

static int bad(char *err, size_t errlen, const char *tok, size_t toklen,
	       const char *why)
{
	snprintf(err, errlen, "bad token '%.*s' (%s)", (int)toklen, tok, why);
	return -1;
}

/* A whole unsigned number in s[0..len), base 0 (0x12 for a QPN). */
static bool number(const char *s, size_t len, uint64_t max, uint64_t *v_p)
{
	char buf[32], *end;
	unsigned long long v;

	if (!len || len >= sizeof(buf) || *s == '-' || *s == '+')
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 0);
	if (errno || *end || v > max)
		return false;
	*v_p = v;
	return true;
}

/* "12%", "0.5%", "0.0001%" (parts per million, at most 100%) or "@N". */
static bool amount(const char *s, size_t len, struct sv_inj_rule *r)
{
	uint64_t whole = 0, frac = 0, scale = 10000;
	size_t i = 0;

	if (len > 1 && s[0] == '@')
		return number(s + 1, len - 1, UINT64_MAX, &r->nth) && r->nth;
	if (len < 2 || s[len - 1] != '%')
		return false;
	len--;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		whole = whole * 10 + (uint64_t)(s[i] - '0');
		if (whole > 100)
			return false;
	}
	if (!i)
		return false;
	if (i < len && s[i] == '.') {
		if (++i == len)
			return false;
		for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
			if (scale == 1)
				return false; /* finer than 1 ppm */
			scale /= 10;
			frac += (uint64_t)(s[i] - '0') * scale;
		}
	}
	if (i != len || whole * 10000 + frac > 1000000)
		return false;
	r->ppm = (uint32_t)(whole * 10000 + frac);
	return true;
}

/* One option of a rule: dir=, qp=, ms=. */
static int option(struct sv_inj_rule *r, const char *tok, size_t len, char *err,
		  size_t errlen)
{
	const char *eq = memchr(tok, '=', len);
	size_t klen = eq ? (size_t)(eq - tok) : len;
	const char *v = eq ? eq + 1 : NULL;
	size_t vlen = eq ? len - klen - 1 : 0;
	uint64_t n;

	if (!eq)
		return bad(err, errlen, tok, len, "expected dir=, qp= or ms=");
	if (klen == 3 && !memcmp(tok, "dir", 3)) {
		if (!is_pkt_kind(r->kind))
			return bad(err, errlen, tok, len,
				   "WR faults happen at the responder");
		if (vlen == 2 && !memcmp(v, "tx", 2))
			r->dirs = SV_INJ_TX;
		else if (vlen == 2 && !memcmp(v, "rx", 2))
			r->dirs = SV_INJ_RX;
		else if (vlen == 4 && !memcmp(v, "both", 4))
			r->dirs = SV_INJ_TX | SV_INJ_RX;
		else
			return bad(err, errlen, tok, len,
				   "dir is tx, rx or both");
		return 0;
	}
	if (klen == 2 && !memcmp(tok, "qp", 2)) {
		if (!number(v, vlen, 0xffffff, &n))
			return bad(err, errlen, tok, len,
				   "a QPN is 0..0xffffff");
		r->any_qp = false;
		r->qpn = (uint32_t)n;
		return 0;
	}
	if (klen == 2 && !memcmp(tok, "ms", 2)) {
		if (r->kind != SV_INJ_DELAY)
			return bad(err, errlen, tok, len, "ms= is for delay");
		if (!number(v, vlen, SV_INJ_DELAY_MAX_MS, &n) || !n)
			return bad(err, errlen, tok, len, "ms is 1..10000");
		r->ms = (uint32_t)n;
		return 0;
	}
	return bad(err, errlen, tok, len, "expected dir=, qp= or ms=");
}

/* kind=amount[,option...] or seed=N. */
static int rule(struct sv_inject *inj, const char *s, size_t len, char *err,
		size_t errlen)
{
	const char *comma = memchr(s, ',', len);
	size_t first = comma ? (size_t)(comma - s) : len;
	const char *eq = memchr(s, '=', first);
	size_t klen = eq ? (size_t)(eq - s) : first;
	struct sv_inj_rule *r;
	int k;

	if (!len)
		return bad(err, errlen, s, len, "empty rule");
	if (klen == 4 && !memcmp(s, "seed", 4) && eq) {
		if (comma)
			return bad(err, errlen, s, len,
				   "seed= takes no options");
		if (!number(eq + 1, first - klen - 1, UINT64_MAX, &inj->seed))
			return bad(err, errlen, s, len, "seed is a number");
		inj->seeded = true;
		return 0;
	}
	for (k = 0; k < SV_INJ_NKINDS; k++)
		if (strlen(kind_names[k]) == klen &&
		    !memcmp(s, kind_names[k], klen))
			break;
	if (k == SV_INJ_NKINDS || !eq)
		return bad(err, errlen, s, first,
			   "expected drop, dup, delay, reorder, corrupt, rnr, "
			   "access, retry or seed, then =");
	if (inj->n == SV_INJ_RULES_MAX)
		return bad(err, errlen, s, len, "more than 16 rules");
	r = &inj->r[inj->n];
	memset(r, 0, sizeof(*r));
	r->kind = (enum sv_inj_kind)k;
	r->dirs = SV_INJ_TX;
	r->any_qp = true;
	r->ms = DEFAULT_DELAY_MS;
	if (!amount(eq + 1, first - klen - 1, r))
		return bad(err, errlen, s, first,
			   "a rate 0..100% (at most 4 decimals) or @N, N >= 1");
	while (comma) {
		const char *tok = comma + 1;
		size_t left = len - (size_t)(tok - s);

		comma = memchr(tok, ',', left);
		if (option(r, tok, comma ? (size_t)(comma - tok) : left, err,
			   errlen))
			return -1;
	}
	inj->n++;
	return 0;
}

int sv_inject_parse(struct sv_inject *inj, const char *spec, int loss,
		    char *err, size_t errlen)
{
	const char *s = spec ? spec : "";

	memset(inj, 0, sizeof(*inj));
	while (*s) {
		const char *semi = strchr(s, ';');
		size_t len = semi ? (size_t)(semi - s) : strlen(s);

		if (rule(inj, s, len, err, errlen)) {
			memset(inj, 0, sizeof(*inj));
			return -1;
		}
		if (!semi)
			break;
		s = semi + 1;
		if (!*s) {
			memset(inj, 0, sizeof(*inj));
			return bad(err, errlen, "", 0, "empty rule after ';'");
		}
	}
	/* SOFTVERBS_LOSS=N: the shorthand for drop=N% (on transmit). */
	if (loss > 0) {
		struct sv_inj_rule *r;

		if (inj->n == SV_INJ_RULES_MAX) {
			memset(inj, 0, sizeof(*inj));
			snprintf(err, errlen,
				 "more than 16 rules with "
				 "SOFTVERBS_LOSS");
			return -1;
		}
		r = &inj->r[inj->n++];
		memset(r, 0, sizeof(*r));
		r->kind = SV_INJ_DROP;
		r->dirs = SV_INJ_TX;
		r->any_qp = true;
		r->ppm = (uint32_t)loss * 10000;
	}
	for (unsigned int i = 0; i < inj->n; i++)
		if (is_pkt_kind(inj->r[i].kind))
			inj->pkt_dirs |= inj->r[i].dirs;
	return 0;
}

void sv_inject_format(const struct sv_inject *inj, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (unsigned int i = 0; i < inj->n && o < len; i++) {
		const struct sv_inj_rule *r = &inj->r[i];
		int w;

		if (r->nth)
			w = snprintf(out + o, len - o, "%s=@%" PRIu64,
				     kind_names[r->kind], r->nth);
		else
			w = snprintf(out + o, len - o, "%s=%u.%04u%%",
				     kind_names[r->kind], r->ppm / 10000,
				     r->ppm % 10000);
		if (w < 0)
			return;
		o += (size_t)w;
		if (o < len && is_pkt_kind(r->kind))
			o += (size_t)snprintf(out + o, len - o, ",dir=%s",
					      r->dirs == SV_INJ_TX ? "tx" :
					      r->dirs == SV_INJ_RX ? "rx" :
								     "both");
		if (o < len && r->kind == SV_INJ_DELAY)
			o += (size_t)snprintf(out + o, len - o, ",ms=%u",
					      r->ms);
		if (o < len && !r->any_qp)
			o += (size_t)snprintf(out + o, len - o, ",qp=0x%x",
					      r->qpn);
		if (o < len)
			o += (size_t)snprintf(out + o, len - o, ";");
	}
	if (o < len)
		snprintf(out + o, len - o, "seed=%" PRIu64, inj->seed);
}

/* ---- the process's rules ------------------------------------------------ */

static struct sv_inject proc_inj;
static pthread_once_t proc_once = PTHREAD_ONCE_INIT;

static void proc_read(void)
{
	char err[256], text[1024];

	if (sv_inject_parse(&proc_inj, sv_env_fault(), sv_env_loss(), err,
			    sizeof(err))) {
		sv_warn("SOFTVERBS_FAULT='%s': %s: no fault injected",
			sv_env_fault(), err);
		return;
	}
	if (!proc_inj.n)
		return;
	/* Without seed= a seed of its own, printed so the run can be
	 * repeated. */
	if (!proc_inj.seeded)
		proc_inj.seed =
			((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
	sv_inject_format(&proc_inj, text, sizeof(text));
	sv_info("fault injection (SOFTVERBS_FAULT): %s", text);
}

/* Read once per process; a forked child keeps its parent's rules and
 * counts (the environment it was born with). */
struct sv_inject *sv_inject_get(void)
{
	pthread_once(&proc_once, proc_read);
	return &proc_inj;
}

/* ---- decisions ---------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	/* splitmix64's finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static bool rule_matches(const struct sv_inj_rule *r, uint32_t qpn)
{
	return r->any_qp || r->qpn == qpn;
}

/* Count one match of rule i; *draw_p: a hash of this match for whatever
 * else the fault needs to choose (the byte to flip). */
static bool rule_hit(const struct sv_inject *inj, unsigned int i,
		     struct sv_inj_rule *r, uint64_t *draw_p)
{
	uint64_t k = atomic_fetch_add(&r->seen, 1) + 1;
	uint64_t h = mix(inj->seed ^ mix(((uint64_t)i << 56) ^ k));

	*draw_p = mix(h);
	if (r->nth)
		return k == r->nth;
	return h % 1000000 < r->ppm;
}

bool sv_inject_qp(const struct sv_qp_engine *qe)
{
	const struct sv_inject *inj = sv_inject_get();

	for (unsigned int i = 0; i < inj->n; i++)
		if (inj->r[i].kind != SV_INJ_PULL &&
		    (inj->r[i].any_qp || inj->r[i].qpn == qe->qpn ||
		     inj->r[i].qpn == qe->dest_qpn))
			return true;
	return false;
}

struct pkt_verdict {
	bool drop, dup, corrupt, reorder;
	uint32_t delay_ms;
	uint64_t draw; /* the corrupt rule's */
};

static void pkt_decide(unsigned int dir, uint32_t qpn, struct pkt_verdict *v)
{
	struct sv_inject *inj = sv_inject_get();

	memset(v, 0, sizeof(*v));
	for (unsigned int i = 0; i < inj->n; i++) {
		struct sv_inj_rule *r = &inj->r[i];
		uint64_t draw;

		if (!is_pkt_kind(r->kind) || !(r->dirs & dir) ||
		    !rule_matches(r, qpn) || !rule_hit(inj, i, r, &draw))
			continue;
		switch (r->kind) {
		case SV_INJ_DROP:
			v->drop = true;
			break;
		case SV_INJ_DUP:
			v->dup = true;
			break;
		case SV_INJ_DELAY:
			if (r->ms > v->delay_ms)
				v->delay_ms = r->ms;
			break;
		case SV_INJ_REORDER:
			v->reorder = true;
			break;
		case SV_INJ_CORRUPT:
			v->corrupt = true;
			v->draw = draw;
			break;
		default:
			break;
		}
	}
}

/* Flip one bit before the ICRC, so that the ICRC no longer matches (a
 * CRC32 sees every such change).  Not in the BTH's first two bytes: the
 * receiver judges the opcode and version before the ICRC (it needs the
 * header's length) and would count a malformed packet instead.  A packet
 * through shared memory has no ICRC (link.h) but a zero in its place: a
 * nonzero one stands for a bad ICRC, which the receiver checks there
 * (recv.c).  One whose ICRC was left to the UDP checksum (wire.h) gets
 * the same nonzero one, which the receiver then checks and refuses. */
static void corrupt(uint8_t *buf, uint32_t len, uint64_t draw, bool shm)
{
	uint32_t body = len - SV_ICRC_BYTES;
	bool unchecked = shm || sv_icrc_left_to_udp(buf, len);

	buf[2 + draw % (body - 2)] ^= (uint8_t)(1u << ((draw >> 32) % 8));
	if (unchecked)
		memset(buf + body, 0xff, SV_ICRC_BYTES);
}

/* ---- held packets -------------------------------------------------------- */

struct sv_held {
	struct sv_held *next;
	uint64_t due; /* ns */
	uint64_t gen; /* reorder: the flush that held it */
	bool reorder;
	bool rx;
	/* tx */
	struct sv_qp_engine *qe;
	/* rx */
	struct sv_sock *sock;
	struct sv_flow flow;
	bool shm;
	struct sv_tx t; /* the packet (rx: t.buf and t.len only) */
};

/* A reordered packet waits for the next flush, or this long at most when
 * no other packet follows it. */
#define REORDER_MAX_NS (1000ull * 1000)

static void hold(struct sv_engine *eng, struct sv_held *h, uint32_t delay_ms)
{
	uint64_t now = sv_eng_now(eng);

	h->reorder = !delay_ms;
	h->due = now + (delay_ms ? delay_ms * 1000000ull : REORDER_MAX_NS);
	h->gen = eng->held_gen;
	h->next = eng->held;
	eng->held = h;
	sv_timer_note(eng, h->due);
}

unsigned int sv_inject_tx(struct sv_engine *eng, struct sv_tx *t, uint32_t qpn)
{
	struct pkt_verdict v;
	struct sv_held *h;

	pkt_decide(SV_INJ_TX, qpn, &v);
	if (v.drop) {
		SV_STAT(eng, fault_drop);
		return 0;
	}
	if (v.corrupt) {
		SV_STAT(eng, fault_corrupt);
		corrupt(t->buf, t->len, v.draw, !t->link->wire);
	}
	/* Connected QPs only: a UD packet's peer is its address handle's,
	 * which may be gone by the time it is due. */
	if ((v.delay_ms || v.reorder) &&
	    (t->qe->type == IBV_QPT_RC || t->qe->type == IBV_QPT_UC)) {
		h = malloc(sizeof(*h));
		if (h) {
			if (v.delay_ms)
				SV_STAT(eng, fault_delay);
			else
				SV_STAT(eng, fault_reorder);
			h->rx = false;
			h->qe = t->qe;
			memcpy(&h->t, t, sizeof(*t));
			hold(eng, h, v.delay_ms);
			return 0;
		}
	}
	if (v.dup) {
		SV_STAT(eng, fault_dup);
		return 2;
	}
	return 1;
}

unsigned int sv_inject_rx(struct sv_engine *eng, struct sv_sock *s,
			  uint8_t *buf, uint32_t len,
			  const struct sv_flow *flow, bool shm, uint32_t qpn)
{
	struct pkt_verdict v;
	struct sv_held *h;

	pkt_decide(SV_INJ_RX, qpn, &v);
	if (v.drop) {
		SV_STAT(eng, fault_drop);
		return 0;
	}
	if (v.corrupt) {
		SV_STAT(eng, fault_corrupt);
		corrupt(buf, len, v.draw, shm);
	}
	if (v.delay_ms || v.reorder) {
		h = malloc(sizeof(*h));
		if (h) {
			if (v.delay_ms)
				SV_STAT(eng, fault_delay);
			else
				SV_STAT(eng, fault_reorder);
			h->rx = true;
			h->qe = NULL;
			h->sock = s;
			h->flow = *flow;
			h->shm = shm;
			memcpy(h->t.buf, buf, len);
			h->t.len = len;
			hold(eng, h, v.delay_ms);
			return 0;
		}
	}
	if (v.dup) {
		SV_STAT(eng, fault_dup);
		return 2;
	}
	return 1;
}

static void release_one(struct sv_engine *eng, struct sv_held *h)
{
	if (h->rx) {
		sv_rx_held(eng, h->sock, h->t.buf, h->t.len, &h->flow, h->shm);
	} else {
		struct sv_link_pkt p = { .buf = h->t.buf,
					 .len = h->t.len,
					 .dst = &h->t.dst,
					 .src = &h->t.src,
					 .tclass = h->t.tclass };
		const struct sv_link_ops *link;
		void *peer;

		/* The QP's link may have changed meanwhile (a peer gone from
		 * shm to UDP): the packet is lost then, as on a wire. */
		sv_links_of_qp(h->qe, &link, &peer);
		if (link == h->t.link && peer == h->t.peer)
			sv_links_tx(eng, h->t.sock, link, peer, &p, 1);
	}
	free(h);
}

void sv_inject_release(struct sv_engine *eng, bool rx)
{
	struct sv_held **pp = &eng->held, *due = NULL, **tail = &due;
	uint64_t now = sv_eng_now(eng), next = 0;

	/* Unlink what is due first: delivering a received packet may send
	 * (and flush, and come back here for transmits). */
	while (*pp) {
		struct sv_held *h = *pp;

		if ((rx || !h->rx) &&
		    (now >= h->due ||
		     (h->reorder && h->gen != eng->held_gen))) {
			*pp = h->next;
			h->next = NULL;
			*tail = h;
			tail = &h->next;
		} else {
			if (!next || h->due < next)
				next = h->due;
			pp = &h->next;
		}
	}
	if (next)
		sv_timer_note(eng, next);
	/* Oldest first: the list is newest first. */
	while (due) {
		struct sv_held *h = due, *prev = NULL;

		while (h->next) {
			prev = h;
			h = h->next;
		}
		if (prev)
			prev->next = NULL;
		else
			due = NULL;
		release_one(eng, h);
	}
}

void sv_inject_qp_gone(struct sv_qp_engine *qe)
{
	struct sv_held **pp = &qe->eng->held;

	while (*pp) {
		struct sv_held *h = *pp;

		if (!h->rx && h->qe == qe) {
			*pp = h->next;
			free(h);
		} else {
			pp = &h->next;
		}
	}
}

void sv_inject_close(struct sv_engine *eng)
{
	while (eng->held) {
		struct sv_held *h = eng->held;

		eng->held = h->next;
		free(h);
	}
}

/* ---- reads of a peer's memory ------------------------------------------ */

bool sv_inject_pull(struct sv_qp_engine *qe)
{
	struct sv_inject *inj = sv_inject_get();
	bool hit = false;

	for (unsigned int i = 0; i < inj->n; i++) {
		struct sv_inj_rule *r = &inj->r[i];
		uint64_t draw;

		if (r->kind == SV_INJ_PULL && rule_matches(r, qe->qpn) &&
		    rule_hit(inj, i, r, &draw))
			hit = true;
	}
	if (hit) {
		SV_STAT(qe->eng, fault_pull);
		sv_info("qp 0x%06x: SOFTVERBS_FAULT refuses reading the "
			"sender's memory",
			qe->qpn);
	}
	return hit;
}

/* ---- WR faults ----------------------------------------------------------- */

enum sv_inj_kind sv_inject_wr(struct sv_qp_engine *qe, uint32_t psn, bool rwqe)
{
	struct sv_inject *inj = sv_inject_get();
	enum sv_inj_kind hit = SV_INJ_NKINDS;

	/* The same message again after an RNR NAK is not a new WR. */
	if (qe->resp.inj_seen && qe->resp.inj_psn == psn)
		return SV_INJ_NKINDS;
	qe->resp.inj_seen = true;
	qe->resp.inj_psn = psn;
	for (unsigned int i = 0; i < inj->n; i++) {
		struct sv_inj_rule *r = &inj->r[i];
		uint64_t draw;

		if (is_pkt_kind(r->kind) || r->kind == SV_INJ_PULL ||
		    !rule_matches(r, qe->qpn) ||
		    (r->kind == SV_INJ_RNR && !rwqe) ||
		    !rule_hit(inj, i, r, &draw) || hit != SV_INJ_NKINDS)
			continue;
		hit = r->kind;
	}
	switch (hit) {
	case SV_INJ_RNR:
		SV_STAT(qe->eng, fault_rnr);
		break;
	case SV_INJ_ACCESS:
		SV_STAT(qe->eng, fault_access);
		break;
	case SV_INJ_RETRY:
		SV_STAT(qe->eng, fault_retry);
		break;
	default:
		break;
	}
	if (hit != SV_INJ_NKINDS)
		sv_info("qp 0x%06x: SOFTVERBS_FAULT forces %s on the request "
			"at psn %u",
			qe->qpn, kind_names[hit], psn);
	return hit;
}
