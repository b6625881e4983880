/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * broken.h: texts the broken test plugins (broken.c) produce, so that the
 * loader's unit test can look for exactly them.
 */
#ifndef WEFT_TESTS_PLUGINS_BROKEN_H
#define WEFT_TESTS_PLUGINS_BROKEN_H

/* weft-initfail.so: init's set_error text (with WEFT_ERR_SYSTEM). */
#define BROKEN_INITFAIL_TEXT "simulated device failure in the initfail test plugin"
/* weft-refuse.so: init's set_error text (with WEFT_ERR_UNSUPPORTED). */
#define BROKEN_REFUSE_TEXT "no test hardware on this node"
/* weft-stub.so: logged through core->log by finalize. */
#define BROKEN_FINALIZE_TEXT "stub finalized"

#endif /* WEFT_TESTS_PLUGINS_BROKEN_H */
