/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Intrusive doubly linked list (circular, with a sentinel head). */
#ifndef SV_UTIL_LIST_H
#define SV_UTIL_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_node {
	struct list_node *next, *prev;
};
struct list_head {
	struct list_node n;
};

#define LIST_HEAD_INIT(name)                 \
	{                                    \
		{                            \
			&(name).n, &(name).n \
		}                            \
	}

static inline void list_head_init(struct list_head *h)
{
	h->n.next = h->n.prev = &h->n;
}
static inline bool list_empty(const struct list_head *h)
{
	return h->n.next == &h->n;
}
static inline void list_add_tail(struct list_head *h, struct list_node *n)
{
	n->prev = h->n.prev;
	n->next = &h->n;
	h->n.prev->next = n;
	h->n.prev = n;
}
static inline void list_del(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}
static inline struct list_node *list_first(const struct list_head *h)
{
	return list_empty(h) ? NULL : h->n.next;
}

/* A node that is on no list (its own neighbour). */
static inline void list_node_init(struct list_node *n)
{
	n->next = n->prev = n;
}

#define list_entry(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))

/* Safe against removal of the current element. */
#define list_for_each_safe(h, it, tmp)                                \
	for ((it) = (h)->n.next, (tmp) = (it)->next; (it) != &(h)->n; \
	     (it) = (tmp), (tmp) = (it)->next)

#endif
