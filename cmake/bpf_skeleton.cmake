# bpf_skeleton(NAME SOURCE HEADER...): compiles SOURCE (a .bpf.c) with clang
# against the running kernel's vmlinux.h and generates NAME.skel.h with
# bpftool, in ${CMAKE_CURRENT_BINARY_DIR}/<source dir name>/. Adds the target
# NAME_skel; a consumer adds it as a dependency and ${CMAKE_CURRENT_BINARY_DIR}
# to its include path, then includes "<source dir name>/NAME.skel.h". CO-RE
# relocations adapt the object to the running kernel at load time.
find_program(BPFTOOL bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)
find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
set(IOTAPE_VMLINUX_BTF /sys/kernel/btf/vmlinux CACHE FILEPATH "Kernel BTF that vmlinux.h is generated from")

set(IOTAPE_VMLINUX_H ${CMAKE_BINARY_DIR}/bpf/vmlinux.h)
add_custom_command(OUTPUT ${IOTAPE_VMLINUX_H}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/bpf
  COMMAND sh -c "${BPFTOOL} btf dump file ${IOTAPE_VMLINUX_BTF} format c > ${IOTAPE_VMLINUX_H}"
  COMMENT "Generating vmlinux.h from ${IOTAPE_VMLINUX_BTF}"
  VERBATIM)
add_custom_target(iotape_vmlinux_h DEPENDS ${IOTAPE_VMLINUX_H})

function(bpf_skeleton name source)
  get_filename_component(dir ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${dir})
  add_custom_command(OUTPUT ${out}/${name}.bpf.o
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -I${CMAKE_BINARY_DIR}/bpf
            -c ${CMAKE_CURRENT_SOURCE_DIR}/${source} -o ${out}/${name}.bpf.o
    DEPENDS ${source} ${ARGN} ${IOTAPE_VMLINUX_H}
    COMMENT "Compiling ${source}"
    VERBATIM)
  add_custom_command(OUTPUT ${out}/${name}.skel.h
    COMMAND sh -c "${BPFTOOL} gen skeleton ${out}/${name}.bpf.o name ${name}_bpf > ${out}/${name}.skel.h"
    DEPENDS ${out}/${name}.bpf.o
    COMMENT "Generating ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skel DEPENDS ${out}/${name}.skel.h)
  add_dependencies(${name}_skel iotape_vmlinux_h)  # one vmlinux.h, made once for every directory
endfunction()
