# SPDX-License-Identifier: GPL-2.0
# kunit.py --qemu_config for this branch on arm64: qemu-system-aarch64
# `virt` under TCG with four NUMA nodes (device tree numa-node-id), one
# vCPU and 256 MiB each.  kunit.py passes '-m 1024'.
from ..qemu_config import QemuArchParams

NODES = 4
MEM_MB = 1024 // NODES

_numa = ['-smp', f'{NODES}', '-accel', 'tcg,thread=multi']
for n in range(NODES):
	_numa += ['-object', f'memory-backend-ram,id=m{n},size={MEM_MB}M',
		  '-numa', f'node,nodeid={n},cpus={n},memdev=m{n}']

QEMU_ARCH = QemuArchParams(linux_arch='arm64',
			   kconfig='''
CONFIG_SERIAL_AMBA_PL011=y
CONFIG_SERIAL_AMBA_PL011_CONSOLE=y''',
			   qemu_arch='aarch64',
			   kernel_path='arch/arm64/boot/Image.gz',
			   kernel_command_line='console=ttyAMA0',
			   extra_qemu_params=['-machine', 'virt', '-cpu', 'max,pauth-impdef=on'] + _numa)
