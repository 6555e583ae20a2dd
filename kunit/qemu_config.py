# SPDX-License-Identifier: GPL-2.0
# kunit.py --qemu_config for this branch: x86_64 under TCG with four NUMA
# nodes (ACPI SRAT), one socket with one vCPU and 256 MiB each (a socket per
# node keeps the scheduler's LLC and NUMA views consistent).  kunit.py itself passes
# '-m 1024', so the node sizes must add up to 1024 MiB.
from ..qemu_config import QemuArchParams

NODES = 4
MEM_MB = 1024 // NODES

_numa = ['-smp', f'{NODES},sockets={NODES},cores=1,threads=1', '-machine', 'q35', '-accel', 'tcg,thread=multi']
for n in range(NODES):
	_numa += ['-object', f'memory-backend-ram,id=m{n},size={MEM_MB}M',
		  '-numa', f'node,nodeid={n},cpus={n},memdev=m{n}']

QEMU_ARCH = QemuArchParams(linux_arch='x86_64',
			   kconfig='''
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y''',
			   qemu_arch='x86_64',
			   kernel_path='arch/x86/boot/bzImage',
			   kernel_command_line='console=ttyS0',
			   extra_qemu_params=['-bios', 'qboot.rom'] + _numa)
