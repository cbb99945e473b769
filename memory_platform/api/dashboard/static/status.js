// On every dashboard page: the header's Dagster recording state (GET /review/api/status,
// every 4 s): queued, recorded and failed runs, red when one failed or the recorder stopped.
async function runs(){try{const r=await fetch('/review/api/status');if(!r.ok)return;
const s=await r.json(),el=document.getElementById('runs');
el.textContent=`Dagster runs: ${s.queued} queued · ${s.recorded} recorded · ${s.failed} failed`+(s.worker==='retrying'?' · retrying':'')
+(s.worker==='dead'?' · recorder stopped':'')+(s.last_error?` (last: ${s.last_error})`:'');
el.className='runs'+(s.failed||s.worker==='dead'?' bad':'');}catch(e){}}
runs();setInterval(runs,4000);
