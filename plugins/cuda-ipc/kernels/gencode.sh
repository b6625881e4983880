#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gencode.sh: turns configure's --with-nvcc-gencode=LIST into nvcc flags.
#
#   sh gencode.sh NVCC LIST
#
# LIST, separated by commas or blanks:
#   75, sm_75, 90a   native code for sm_75 (sm_90a): runs on GPUs of that
#                    compute capability (and, for plain numbers, later
#                    minor versions of the same major one)
#   compute_90       PTX for compute_90, which the driver compiles for any
#                    GPU of 9.0 or later when it loads the module
#   ptx              PTX of the newest native architecture listed, so that
#                    GPUs newer than every listed one still run the kernels
#   default          75,80,86,89,90,100,120,ptx, less the architectures
#                    this nvcc does not know (said on line 3)
# or, when it starts with "-", nvcc flags used as they are ("-gencode
# arch=compute_90a,code=sm_90a ...").
#
# Prints three lines: the nvcc flags, the targets in words ("sm_75 sm_80
# compute_120"), and the default architectures left out because this nvcc
# lacks them (empty when none). An item nvcc does not know, or one that
# is not of the forms above, is an error: a message on stderr, exit 1.
set -u

nvcc=$1
list=$2
default_list="75 80 86 89 90 100 120 ptx"

case $list in
-*)
    printf '%s\n%s\n\n' "$list" "as given ($list)"
    exit 0
    ;;
esac

codes=$("$nvcc" --list-gpu-code 2>/dev/null | tr '\n' ' ')
archs=$("$nvcc" --list-gpu-arch 2>/dev/null | tr '\n' ' ')
if [ -z "$codes" ] || [ -z "$archs" ]; then
    echo "$nvcc --list-gpu-code and --list-gpu-arch printed nothing: is it nvcc?" >&2
    exit 1
fi

lenient=no
items=$(echo "$list" | tr ',' ' ')
case " $items " in
*" default "*)
    lenient=yes
    items=$(echo " $items " | sed "s/ default / $default_list /")
    ;;
esac

flags= targets= dropped= newest= ptx=no
for item in $items; do
    case $item in
    ptx)
        ptx=yes
        continue
        ;;
    compute_*) kind=ptx num=${item#compute_} ;;
    sm_*) kind=sm num=${item#sm_} ;;
    *) kind=sm num=$item ;;
    esac
    case $num in
    '' | *[!0-9a-z]* | [!0-9]*)
        echo "--with-nvcc-gencode: '$item' is not 75, sm_75, compute_75 or ptx" >&2
        exit 1
        ;;
    esac
    # nvcc lists no architecture-specific variant (sm_90a): the base
    # architecture stands for it
    digits=$(echo "$num" | sed 's/[a-z]*$//')
    if [ "$kind" = sm ]; then
        name=sm_$num base=sm_$digits known=$codes
    else
        name=compute_$num base=compute_$digits known=$archs
    fi
    case " $known " in
    *" $base "*) ;;
    *)
        if [ "$lenient" = yes ]; then
            dropped="$dropped $name"
            continue
        fi
        echo "--with-nvcc-gencode: $nvcc does not know $name (it knows: ${codes% })" >&2
        exit 1
        ;;
    esac
    if [ "$kind" = sm ]; then
        flags="$flags -gencode arch=compute_$num,code=sm_$num"
        if [ -z "$newest" ] || [ "$digits" -gt "$(echo "$newest" | sed 's/[a-z]*$//')" ]; then
            newest=$num
        fi
    else
        flags="$flags -gencode arch=compute_$num,code=compute_$num"
    fi
    targets="$targets $name"
done
if [ "$ptx" = yes ]; then
    if [ -z "$newest" ]; then
        echo "--with-nvcc-gencode: 'ptx' needs a native architecture in the list" >&2
        exit 1
    fi
    case " $targets " in
    *" compute_$newest "*) ;;
    *)
        flags="$flags -gencode arch=compute_$newest,code=compute_$newest"
        targets="$targets compute_$newest"
        ;;
    esac
fi
if [ -z "$flags" ]; then
    echo "--with-nvcc-gencode: '$list' names no architecture $nvcc knows" >&2
    exit 1
fi
printf '%s\n%s\n%s\n' "${flags# }" "${targets# }" "${dropped# }"
