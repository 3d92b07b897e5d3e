"""3x3 stride-2 padding-1 max pooling on PoCL: nn_pool.cl's pool_fwd (one output per work-item)
against pool_max_s2_rows (a work-item per output row, vectors inside the row), kiln's kernels
built from cl_kernels/ with PyOpenCL, [4, 64, 112, 112] f32 and f64, device ms (median, min of
nine runs), and whether the outputs agree. Run from the checkout root with Debian's python3:
    /usr/bin/python3 bench/pocl_proto/pool_s2.py
"""
import pyopencl as cl, numpy as np
ctx=cl.create_some_context(False)
q=cl.CommandQueue(ctx,properties=cl.command_queue_properties.PROFILING_ENABLE)
src=open('cl_kernels/nn_pool.cl').read()
L4=cl.cltypes.make_long4
for T,o,npt in [('f32',"-DT=float -DKILN_DT_F32=1",np.float32),('f64',"-DT=double -DKILN_DT_F64=1",np.float64)]:
  prg=cl.Program(ctx,src).build(options="-cl-std=CL1.2 -DKILN_FP64=1 -Icl_kernels -Iinclude "+o)
  planes=4*64; H=W=112; OH=OW=56
  x=np.random.rand(planes*H*W).astype(npt); xb=cl.Buffer(ctx,cl.mem_flags.COPY_HOST_PTR,hostbuf=x)
  yb=cl.Buffer(ctx,cl.mem_flags.READ_WRITE,planes*OH*OW*8); ib=cl.Buffer(ctx,cl.mem_flags.READ_WRITE,planes*OH*OW*8)
  args=lambda: (xb,np.uint64(0),yb,np.uint64(0),ib,np.uint64(0),np.uint64(planes),L4(1,H,W,0),L4(1,OH,OW,0),L4(1,3,3,0),L4(1,2,2,0),L4(0,1,1,0),L4(1,1,1,0),np.uint32(3))
  res={}
  for name,gs,ls in [('pool_fwd',(((OH*OW+255)//256)*256,planes),(256,1)),('pool_max_s2_rows',(planes*OH,),None)]:
    ts=[]; k=getattr(prg,name)
    for r in range(9):
      e=k(q,gs,ls,*args()); e.wait(); ts.append((e.profile.end-e.profile.start)*1e-6)
    y=np.empty(planes*OH*OW,npt); cl.enqueue_copy(q,y,yb); res[name]=y
    print(T,name,f"{np.median(ts):.3f} {min(ts):.3f}")
  print('same', np.array_equal(res['pool_fwd'],res['pool_max_s2_rows']))
