/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mesh.c: N-D device meshes (torch's DeviceMesh): ranks of a communicator
 * laid out row-major in a shape, and this rank's communicator along each
 * dimension or along several flattened together.
 *
 * The communicator along a set of dimensions is a split of the mesh's
 * communicator: ranks that agree on the coordinates of every other
 * dimension share a color, and the key is the rank's row-major index
 * within the chosen dimensions (in the order they are named), which gives
 * exactly torch's arange(world).view(shape) groups.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm/comm.h"
#include "core/base/error.h"

#define MESH_NAME_MAX 64

struct weft_mesh {
    weft_comm_t comm;
    int ndims;
    int shape[WEFT_MAX_DIMS];
    int coords[WEFT_MAX_DIMS];
    char names[WEFT_MAX_DIMS][MESH_NAME_MAX];
    weft_comm_t dim_comms[WEFT_MAX_DIMS];
    /* Communicators of weft_mesh_comm_dims, released with the mesh. */
    weft_comm_t *extra;
    int nextra;
};

/* The split that puts this rank with those differing from it only in the
 * dimensions selected (in the order of dims). */
static weft_result_t mesh_split(struct weft_mesh *m, int n, const int *dims, weft_comm_t *out)
{
    int selected[WEFT_MAX_DIMS] = { 0 }, color = 0, key = 0;

    for (int i = 0; i < n; i++) {
        selected[dims[i]] = 1;
        key = key * m->shape[dims[i]] + m->coords[dims[i]];
    }
    for (int d = 0; d < m->ndims; d++)
        if (!selected[d])
            color = color * m->shape[d] + m->coords[d];
    return weft_comm_split(m->comm, color, key, out);
}

static void mesh_free(struct weft_mesh *m)
{
    for (int d = 0; d < m->ndims; d++)
        if (m->dim_comms[d])
            weft_comm_destroy(m->dim_comms[d]);
    for (int i = 0; i < m->nextra; i++)
        weft_comm_destroy(m->extra[i]);
    free(m->extra);
    free(m);
}

WEFT_API weft_result_t weft_mesh_create(weft_comm_t comm, int ndims, const int *shape,
                                        const char *const *dim_names, weft_mesh_t *mesh)
{
    struct weft_mesh *m;
    weft_result_t rc = weft__comm_check(comm, "weft_mesh_create");
    long product = 1;
    int rest;

    if (rc == WEFT_SUCCESS)
        rc = weft__comm_quiesce(comm, "weft_mesh_create");
    if (rc != WEFT_SUCCESS)
        return rc;
    if (!mesh)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_create: mesh is NULL");
    if (ndims < 1 || ndims > WEFT_MAX_DIMS)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_create: ndims %d is not from 1 "
                           "to %d", ndims, WEFT_MAX_DIMS);
    if (!shape)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_create: shape is NULL");
    for (int d = 0; d < ndims; d++) {
        if (shape[d] < 1)
            return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_create: shape[%d] is %d",
                               d, shape[d]);
        product *= shape[d];
        if (product > comm->size)
            break;
    }
    if (product != comm->size)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_create: the shape holds %s%ld "
                           "ranks, the communicator %d", product > comm->size ? "more than " :
                           "", product, comm->size);
    for (int d = 0; dim_names && d < ndims; d++) {
        if (!dim_names[d] || !dim_names[d][0] || strlen(dim_names[d]) >= MESH_NAME_MAX)
            return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_create: dim_names[%d] is "
                               "empty, NULL or longer than %d bytes", d, MESH_NAME_MAX - 1);
        for (int e = 0; e < d; e++)
            if (!strcmp(dim_names[d], dim_names[e]))
                return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_create: dim_names[%d] "
                                   "and dim_names[%d] are both \"%s\"", e, d, dim_names[d]);
    }
    m = calloc(1, sizeof(*m));
    if (!m)
        return weft__error(WEFT_ERR_NO_MEMORY, "weft_mesh_create: out of memory");
    m->comm = comm;
    m->ndims = ndims;
    rest = comm->rank;
    for (int d = ndims - 1; d >= 0; d--) {
        m->shape[d] = shape[d];
        m->coords[d] = rest % shape[d];
        rest /= shape[d];
        if (dim_names)
            snprintf(m->names[d], MESH_NAME_MAX, "%s", dim_names[d]);
        else
            snprintf(m->names[d], MESH_NAME_MAX, "dim%d", d);
    }
    for (int d = 0; d < ndims; d++) {
        rc = mesh_split(m, 1, &d, &m->dim_comms[d]);
        if (rc != WEFT_SUCCESS) {
            mesh_free(m);
            return rc;
        }
    }
    *mesh = m;
    return WEFT_SUCCESS;
}

static weft_result_t check_mesh(weft_mesh_t mesh, const char *fn, const void *out)
{
    if (!mesh)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: mesh is NULL", fn);
    if (!out)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: the output argument is NULL", fn);
    return WEFT_SUCCESS;
}

static int dim_by_name(const struct weft_mesh *m, const char *name)
{
    for (int d = 0; name && d < m->ndims; d++)
        if (!strcmp(m->names[d], name))
            return d;
    return -1;
}

WEFT_API weft_result_t weft_mesh_comm_dim(weft_mesh_t mesh, int dim, weft_comm_t *comm)
{
    weft_result_t rc = check_mesh(mesh, "weft_mesh_comm_dim", comm);

    if (rc != WEFT_SUCCESS)
        return rc;
    if (dim < 0 || dim >= mesh->ndims)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_comm_dim: dim %d is not from 0 "
                           "to %d", dim, mesh->ndims - 1);
    *comm = mesh->dim_comms[dim];
    return WEFT_SUCCESS;
}

WEFT_API weft_result_t weft_mesh_comm(weft_mesh_t mesh, const char *dim_name, weft_comm_t *comm)
{
    weft_result_t rc = check_mesh(mesh, "weft_mesh_comm", comm);
    int d;

    if (rc != WEFT_SUCCESS)
        return rc;
    d = dim_by_name(mesh, dim_name);
    if (d < 0)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_comm: the mesh has no dimension "
                           "named \"%s\"", dim_name ? dim_name : "(null)");
    *comm = mesh->dim_comms[d];
    return WEFT_SUCCESS;
}

WEFT_API weft_result_t weft_mesh_comm_dims(weft_mesh_t mesh, int n, const char *const *dim_names,
                                           weft_comm_t *comm)
{
    weft_result_t rc = check_mesh(mesh, "weft_mesh_comm_dims", comm);
    int dims[WEFT_MAX_DIMS], seen[WEFT_MAX_DIMS] = { 0 };
    weft_comm_t *grown, out = NULL;

    if (rc != WEFT_SUCCESS)
        return rc;
    if (n < 1 || n > mesh->ndims || !dim_names)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_comm_dims: n is %d (from 1 to %d) "
                           "and dim_names %s", n, mesh->ndims, dim_names ? "given" : "NULL");
    for (int i = 0; i < n; i++) {
        dims[i] = dim_by_name(mesh, dim_names[i]);
        if (dims[i] < 0 || seen[dims[i]])
            return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_comm_dims: dim_names[%d] "
                               "\"%s\" is %s", i, dim_names[i] ? dim_names[i] : "(null)",
                               dims[i] < 0 ? "not a dimension of the mesh" : "named twice");
        seen[dims[i]] = 1;
    }
    grown = realloc(mesh->extra, (size_t)(mesh->nextra + 1) * sizeof(*grown));
    if (!grown)
        return weft__error(WEFT_ERR_NO_MEMORY, "weft_mesh_comm_dims: out of memory");
    mesh->extra = grown;
    rc = mesh_split(mesh, n, dims, &out);
    if (rc != WEFT_SUCCESS)
        return rc;
    mesh->extra[mesh->nextra++] = out;
    *comm = out;
    return WEFT_SUCCESS;
}

WEFT_API weft_result_t weft_mesh_ndims(weft_mesh_t mesh, int *n)
{
    weft_result_t rc = check_mesh(mesh, "weft_mesh_ndims", n);

    if (rc == WEFT_SUCCESS)
        *n = mesh->ndims;
    return rc;
}

WEFT_API weft_result_t weft_mesh_shape(weft_mesh_t mesh, int *shape)
{
    weft_result_t rc = check_mesh(mesh, "weft_mesh_shape", shape);

    if (rc == WEFT_SUCCESS)
        memcpy(shape, mesh->shape, (size_t)mesh->ndims * sizeof(int));
    return rc;
}

WEFT_API weft_result_t weft_mesh_coords(weft_mesh_t mesh, int *coords)
{
    weft_result_t rc = check_mesh(mesh, "weft_mesh_coords", coords);

    if (rc == WEFT_SUCCESS)
        memcpy(coords, mesh->coords, (size_t)mesh->ndims * sizeof(int));
    return rc;
}

WEFT_API weft_result_t weft_mesh_destroy(weft_mesh_t mesh)
{
    if (!mesh)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mesh_destroy: mesh is NULL");
    mesh_free(mesh);
    return WEFT_SUCCESS;
}
